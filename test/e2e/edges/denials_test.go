package edges

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/providers/edges/protocol"
)

// status is the part of a Kubernetes Status the tests read.
type status struct {
	Kind    string `json:"kind"`
	Code    int    `json:"code"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// websocketCode opens a websocket to path on the hub and returns the
// answer's status (101 when it was accepted).
func (e *env) websocketCode(t *testing.T, token, path string) int {
	t.Helper()
	d := websocket.Dialer{TLSClientConfig: e.hub.tlsConfig(), HandshakeTimeout: 30 * time.Second}
	hdr := http.Header{}
	if token != "" {
		hdr.Set("Authorization", "Bearer "+token)
	}
	c, resp, err := d.Dial("wss"+strings.TrimPrefix(e.hub.URL, "https")+path, hdr)
	if err == nil {
		c.Close()
		return http.StatusSwitchingProtocols
	}
	if resp == nil {
		t.Fatalf("websocket to %s: %v", path, err)
	}
	return resp.StatusCode
}

// testEgressDenials: anonymous and invalid-token callers get 401;
// cross-user and cross-workspace callers get 403, and the same 403 for a
// connected edge, an edge with no agent and an edge that does not exist,
// because authorization comes before any tunnel lookup.
func testEgressDenials(t *testing.T, e *env) {
	_, _, ed := e.connectEdge(t, "lab-guarded", v1alpha1.TypeKubernetes, agentOptions{kubeconfig: e.agentKubeconfig})
	e.createEdge(t, labWorkspace, "lab-no-agent", v1alpha1.TypeKubernetes)
	e.createEdge(t, labWorkspace, "lab-server-guarded", v1alpha1.TypeServer)
	e.createEdge(t, carolWorkspace, "carol-edge", v1alpha1.TypeKubernetes)

	egress := func(cluster, name, sub string) string {
		return protocol.BackendPrefix + protocol.EgressBase(cluster, name) + sub
	}
	if want := e.hub.URL + egress(e.labID, "lab-guarded", "/k8s"); ed.Status.URL != want {
		t.Fatalf("status.URL %q, want %q", ed.Status.URL, want)
	}
	call := func(token, ws, path string) (int, status, string) {
		hdr := http.Header{"Accept": {"application/json"}}
		if ws != "" {
			hdr.Set("X-Wharf-Workspace", ws)
		}
		code, body := e.hub.do(token, http.MethodGet, path, "", hdr)
		var s status
		_ = json.Unmarshal([]byte(body), &s)
		return code, s, body
	}
	// Sanity: alice is let through (so the refusals below are refusals).
	// (No X-Wharf-Workspace: kubectl with status.URL sends none either; the
	// edge's workspace is in the path.)
	if code, _, body := call(aliceToken, "", egress(e.labID, "lab-guarded", "/k8s/api")); code != http.StatusOK {
		t.Fatalf("alice through the edge: %d %s", code, body)
	}

	for _, c := range []struct {
		name, token, ws string
	}{
		{"anonymous", "", ""},
		{"invalid token", "not-a-token-at-all", ""},
		{"invalid token with workspace", "not-a-token-at-all", "root:" + labWorkspace},
	} {
		code, _, body := call(c.token, c.ws, egress(e.labID, "lab-guarded", "/k8s/api"))
		if code != http.StatusUnauthorized {
			t.Errorf("%s: %d %s, want 401", c.name, code, body)
		}
	}

	// carol is authenticated but holds nothing in lab. Every lab edge,
	// connected or not, existing or not, kubernetes or server, answers
	// her alike.
	type answer struct {
		code int
		body string
	}
	var first *answer
	for _, c := range []struct{ name, path string }{
		{"lab-guarded", egress(e.labID, "lab-guarded", "/k8s/api")},
		{"lab-no-agent", egress(e.labID, "lab-no-agent", "/k8s/api")},
		{"lab-missing", egress(e.labID, "lab-missing", "/k8s/api")},
		{"lab-server-guarded", egress(e.labID, "lab-server-guarded", "/k8s/api")},
	} {
		code, s, body := call(carolToken, "root:"+carolWorkspace, c.path)
		if code != http.StatusForbidden || s.Kind != "Status" || s.Reason != "Forbidden" {
			t.Errorf("carol on %s: %d %s, want a 403 Status", c.name, code, body)
			continue
		}
		// The only difference allowed is the name itself.
		norm := answer{code, strings.ReplaceAll(body, c.name, "<name>")}
		if first == nil {
			first = &norm
		} else if norm != *first {
			t.Errorf("carol on %s: answer %q differs from %q: the denial tells edges apart", c.name, norm.body, first.body)
		}
		if strings.Contains(body, "tunnel") || strings.Contains(body, "connected") {
			t.Errorf("carol on %s: the denial mentions the tunnel: %s", c.name, body)
		}
	}
	// carol's ssh egress (a websocket, as wharf ssh-proxy opens it) and
	// join-token minting in lab are refused too.
	for _, name := range []string{"lab-server-guarded", "lab-missing"} {
		if code := e.websocketCode(t, carolToken, egress(e.labID, name, "/ssh")); code != http.StatusForbidden {
			t.Errorf("carol on lab's ssh egress of %s: %d, want 403", name, code)
		}
	}
	if code, _, body := e.mintToken(t, carolToken, e.labID, carolWorkspace, "lab-guarded"); code != http.StatusForbidden {
		t.Errorf("carol minted a join token for a lab edge: %d %s", code, body)
	}
	// carol naming lab as her workspace is stopped by the hub.
	if code, _, body := call(carolToken, "root:"+labWorkspace, egress(e.labID, "lab-guarded", "/k8s/api")); code != http.StatusForbidden {
		t.Errorf("carol with X-Wharf-Workspace lab: %d %s", code, body)
	}
	// Cross-workspace the other way: alice (allowed in lab) gets nothing
	// from carol's workspace, and the same answer for a missing edge.
	var crossFirst string
	for _, name := range []string{"carol-edge", "carol-missing"} {
		code, _, body := call(aliceToken, "", egress(e.carolID, name, "/k8s/api"))
		if code != http.StatusForbidden {
			t.Errorf("alice on carol's %s: %d %s, want 403", name, code, body)
		}
		body = strings.ReplaceAll(body, name, "<name>")
		if crossFirst == "" {
			crossFirst = body
		} else if body != crossFirst {
			t.Errorf("alice on carol's workspace: %q vs %q", body, crossFirst)
		}
	}
	// A path naming lab's cluster with an edge of carol's name is still
	// lab's edge, which carol may not use: names never cross workspaces.
	if code, _, body := call(carolToken, "root:"+carolWorkspace, egress(e.labID, "carol-edge", "/k8s/api")); code != http.StatusForbidden {
		t.Errorf("carol's edge name under lab's cluster: %d %s", code, body)
	}
}
