package edges

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/providers/edges/protocol"
	"github.com/wharfhub/wharf/revdial"
	"github.com/wharfhub/wharf/sdk"
)

// egressFixture is a provider with real revdial tunnels in cluster "c1": a
// kubernetes edge "kube" whose agent serves target over HTTP, a server edge
// "srv" whose agent echoes raw bytes the way a TCP service would answer,
// and a kubernetes edge "idle" whose agent never connected.
type egressFixture struct {
	hub     *tunnelHub
	egress  *Egress
	ps      *httptest.Server
	authz   *tableAuthorizer
	metrics *byteMetrics
	kube    *revdial.Client // the agent of "kube"
}

var (
	alice = sdk.Identity{User: "alice", Groups: []string{"devs", "system:authenticated", "ops"}, Tenant: "root:team", Cluster: "c1"}
	bob   = sdk.Identity{User: "bob", Groups: []string{"devs"}, Tenant: "root:team", Cluster: "c1"}
)

func newEgressFixture(t *testing.T, target http.Handler) *egressFixture {
	t.Helper()
	f := &egressFixture{hub: newTunnelHub(t), metrics: &byteMetrics{}, authz: &tableAuthorizer{allow: map[string]bool{
		"alice c1/kube proxy": true, "alice c1/srv proxy": true, "alice c1/idle proxy": true, "alice c1/gone proxy": true,
	}}}
	edges := edgeStore{
		"c1/kube": edgeOf(v1alpha1.TypeKubernetes),
		"c1/idle": edgeOf(v1alpha1.TypeKubernetes),
		"c1/srv":  edgeOf(v1alpha1.TypeServer),
	}
	var err error
	f.egress, err = NewEgress(EgressConfig{Authorizer: f.authz, Edge: edges.get, Tunnel: f.hub.tunnel, Metrics: f.metrics})
	if err != nil {
		t.Fatal(err)
	}
	f.ps = providerServer(t, f.egress)
	if target != nil {
		f.kube = f.hub.agent("c1", "kube")
		srv := &http.Server{Handler: target}
		go func() { _ = srv.Serve(f.kube) }()
		t.Cleanup(func() { _ = srv.Close() })
	}
	echo := f.hub.agent("c1", "srv")
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return f
}

func (f *egressFixture) url(cluster, name, rest string) string {
	return f.ps.URL + protocol.EgressBase(cluster, name) + rest
}

func decodeStatus(t *testing.T, body []byte) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("not a Status (%v): %s", err, body)
	}
	return st
}

// TestEgressOrderOfChecks: identity, then authorization before anything
// about the edge (a forbidden caller cannot tell a missing edge from an
// existing one), then existence, type and tunnel.
func TestEgressOrderOfChecks(t *testing.T) {
	f := newEgressFixture(t, http.NotFoundHandler())
	forbidden := func(user, name string) string {
		return `edges.edges.wharf.dev "` + name + `" is forbidden: User "` + user + `" cannot proxy resource "edges" in API group "edges.wharf.dev" at the cluster scope`
	}
	for _, tc := range []struct {
		name    string
		id      sdk.Identity
		method  string
		url     string
		code    int
		reason  metav1.StatusReason
		message string
	}{
		{"anonymous", sdk.Identity{}, "GET", f.url("c1", "kube", "/k8s/api"), 401, metav1.StatusReasonUnauthorized, "Unauthorized"},
		{"anonymous ssh", sdk.Identity{}, "GET", f.url("c1", "srv", "/ssh"), 400, metav1.StatusReasonBadRequest, ""},
		{"forbidden existing", bob, "GET", f.url("c1", "kube", "/k8s/api"), 403, metav1.StatusReasonForbidden, forbidden("bob", "kube")},
		{"forbidden missing", bob, "GET", f.url("c1", "nosuch", "/k8s/api"), 403, metav1.StatusReasonForbidden, forbidden("bob", "nosuch")},
		{"forbidden other cluster", alice, "GET", f.url("c2", "kube", "/k8s/api"), 403, metav1.StatusReasonForbidden, forbidden("alice", "kube")},
		{"forbidden not connected", bob, "GET", f.url("c1", "idle", "/k8s/api"), 403, metav1.StatusReasonForbidden, forbidden("bob", "idle")},
		{"allowed missing", alice, "GET", f.url("c1", "gone", "/k8s/api"), 404, metav1.StatusReasonNotFound, `edges.edges.wharf.dev "gone" not found`},
		{"k8s on a server", alice, "GET", f.url("c1", "srv", "/k8s/api"), 400, metav1.StatusReasonBadRequest, `edge "srv" is of type "server"; this path serves kubernetes edges`},
		{"not connected", alice, "GET", f.url("c1", "idle", "/k8s/api"), 503, metav1.StatusReasonServiceUnavailable, `edge "idle" is not connected`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.DefaultClient.Do(asHub(t, tc.method, tc.url, tc.id))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code {
				t.Fatalf("code %d, want %d: %s", resp.StatusCode, tc.code, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			st := decodeStatus(t, body)
			if st.Reason != tc.reason || int(st.Code) != tc.code {
				t.Errorf("reason %q code %d, want %q %d", st.Reason, st.Code, tc.reason, tc.code)
			}
			if tc.message != "" && st.Message != tc.message {
				t.Errorf("message\n %q\nwant\n %q", st.Message, tc.message)
			}
		})
	}
	// The two forbidden answers are byte for byte the same but for the name.
	get := func(name string) string {
		resp, err := http.DefaultClient.Do(asHub(t, "GET", f.url("c1", name, "/k8s/api"), bob))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.ReplaceAll(string(b), name, "NAME")
	}
	if a, b := get("kube"), get("nosuch"); a != b {
		t.Errorf("forbidden answers differ:\n%s\n%s", a, b)
	}
}

// TestEgressServerType: ssh on a kubernetes edge is a 400 after authz.
func TestEgressSSHOnKubernetesEdge(t *testing.T) {
	f := newEgressFixture(t, http.NotFoundHandler())
	code, body := wsDialStatus(t, f.url("c1", "kube", "/ssh"), alice, "")
	if code != 400 || !strings.Contains(body, `edge \"kube\" is of type \"kubernetes\"; this path serves server edges`) {
		t.Fatalf("%d %s", code, body)
	}
	code, body = wsDialStatus(t, f.url("c1", "srv", "/ssh"), bob, "")
	if code != 403 || !strings.Contains(body, `User \"bob\" cannot proxy resource`) {
		t.Fatalf("%d %s", code, body)
	}
}
