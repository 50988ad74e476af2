package edges

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/providers/edges/protocol"
)

// join posts a join token straight to the agent ingress, as an agent's
// first call would, and returns the answer.
func (e *env) join(t *testing.T, cluster, name, token string) (int, string) {
	t.Helper()
	body := fmt.Sprintf(`{"token":%q}`, token)
	return e.hub.do("", http.MethodPost, protocol.BackendPrefix+protocol.AgentBase(cluster, name)+"/join", body, nil)
}

// controlDial opens the agent control websocket with a credential and
// returns the HTTP status of the answer (101 when accepted).
func (e *env) controlDial(t *testing.T, cluster, name, credential string) int {
	t.Helper()
	d := websocket.Dialer{TLSClientConfig: e.hub.tlsConfig(), HandshakeTimeout: 30 * time.Second}
	u := "wss" + strings.TrimPrefix(e.hub.URL, "https") + protocol.BackendPrefix + protocol.AgentBase(cluster, name) + "/proxy"
	c, resp, err := d.Dial(u, http.Header{"Authorization": {"Bearer " + credential}})
	if err == nil {
		defer c.Close()
		return http.StatusSwitchingProtocols
	}
	if resp == nil {
		t.Fatalf("control dial: %v", err)
	}
	return resp.StatusCode
}

// savedCredential reads the agent's credential from its state dir: the one
// file there that is not state.json.
func savedCredential(t *testing.T, dir string) (string, os.FileMode) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		if en.IsDir() || en.Name() == "state.json" || strings.HasPrefix(en.Name(), ".") {
			continue
		}
		p := filepath.Join(dir, en.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(p)
		return strings.TrimSpace(string(b)), fi.Mode().Perm()
	}
	t.Fatalf("no credential in %s (%v)", dir, entries)
	return "", 0
}

// testJoinTokenAndCredential: the join token works once, a wrong token
// never connects, the token is in no object and no log, the saved
// credential (0600) reconnects with no token, and deleting the Edge
// disconnects the agent and refuses its credential, even for a new Edge
// of the same name.
func testJoinTokenAndCredential(t *testing.T, e *env) {
	const name = "lab-join"
	e.createEdge(t, labWorkspace, name, v1alpha1.TypeKubernetes)
	r := startRelay(t, strings.TrimPrefix(e.hub.URL, "https://"))
	bundle, token := e.bundle(t, e.labID, labWorkspace, name, v1alpha1.TypeKubernetes, "https://"+r.Addr)
	a := startAgent(t, agentOptions{join: bundle, kubeconfig: e.agentKubeconfig})
	e.waitPhase(t, labWorkspace, name, v1alpha1.PhaseReady, 2*time.Minute)

	// Single use: the token the agent used is spent.
	if code, body := e.join(t, e.labID, name, token); code != http.StatusUnauthorized && code != http.StatusForbidden {
		t.Errorf("a spent join token was accepted again: %d %s", code, body)
	}
	// A second agent with the same bundle gets no credential.
	second := startAgent(t, agentOptions{join: bundle, kubeconfig: e.agentKubeconfig})
	// A wrong token, for an existing edge, never connects.
	e.createEdge(t, labWorkspace, "lab-wrong", v1alpha1.TypeKubernetes)
	wrong := encodeBundle(t, protocol.Bundle{HubURL: e.hub.URL, CA: string(e.hub.CA), Cluster: e.labID, Edge: "lab-wrong", Type: "kubernetes", Token: "wharf-join-not-a-real-token"})
	wrongAgent := startAgent(t, agentOptions{join: wrong, kubeconfig: e.agentKubeconfig})
	if code, body := e.join(t, e.labID, "lab-wrong", "wharf-join-not-a-real-token"); code != http.StatusUnauthorized && code != http.StatusForbidden {
		t.Errorf("a wrong join token: %d %s", code, body)
	}
	// A token minted for one edge does not join another.
	_, other := e.bundle(t, e.labID, labWorkspace, name, v1alpha1.TypeKubernetes, e.hub.URL)
	if code, body := e.join(t, e.labID, "lab-wrong", other); code != http.StatusUnauthorized && code != http.StatusForbidden {
		t.Errorf("another edge's join token: %d %s", code, body)
	}
	// Give both refused agents time to try (they retry with backoff).
	time.Sleep(10 * time.Second)
	if ed, err := e.getEdge(t, labWorkspace, "lab-wrong"); err != nil || ed.Status.Phase == v1alpha1.PhaseReady {
		t.Errorf("an agent with a wrong token connected: %v %+v", err, ed)
	}
	if entries, _ := os.ReadDir(second.StateDir); hasCredential(entries) {
		t.Errorf("the second agent with a spent token saved a credential: %v", entries)
	}

	// The saved credential: 0600, reconnects with no token.
	cred, mode := savedCredential(t, a.StateDir)
	if mode != 0o600 {
		t.Errorf("credential file mode %o, want 600", mode)
	}
	a.stop()
	e.waitPhase(t, labWorkspace, name, v1alpha1.PhaseDisconnected, 90*time.Second)
	a.restart()
	e.waitPhase(t, labWorkspace, name, v1alpha1.PhaseReady, 2*time.Minute)
	// The credential may have rotated on reconnect; take the current one.
	cred2, _ := savedCredential(t, a.StateDir)

	// Neither the token nor a credential is in any object or log.
	secrets := map[string]string{"join token": token, "other join token": other, "credential": cred, "current credential": cred2}
	var haystacks = map[string]string{
		"hub log (with the provider's)": e.hub.log.String(),
		"agent log":                     a.log.String(),
		"second agent log":              second.log.String(),
		"wrong agent log":               wrongAgent.log.String(),
	}
	for _, ws := range []string{"root", "root:" + labWorkspace} {
		for _, kinds := range []string{"edges", "secrets,configmaps,leases,events", "events.events.k8s.io"} {
			out, err := e.hub.kubectl(ws, "get", kinds, "-A", "-o", "yaml")
			if err != nil && !strings.Contains(out, "the server doesn't have a resource type") {
				t.Fatalf("kubectl get %s in %s: %v\n%s", kinds, ws, err, out)
			}
			haystacks[ws+" "+kinds] = out
		}
	}
	for sname, s := range secrets {
		if len(s) < 8 {
			t.Fatalf("%s is suspiciously short: %d bytes", sname, len(s))
		}
		for where, hay := range haystacks {
			if strings.Contains(hay, s) {
				t.Errorf("the %s appears in %s", sname, where)
			}
		}
	}

	// Deleting the Edge disconnects the agent and refuses its credential.
	before := len(a.log.String())
	e.hub.mustKubectl("root:"+labWorkspace, "delete", "edge", name, "--wait=true")
	eventually(t, time.Minute, func() error {
		// The agent's tunnel ends: it logs the tunnel going down (and then
		// its refused reconnects).
		if after := a.log.String()[before:]; !strings.Contains(strings.ToLower(after), "tunnel down") {
			return fmt.Errorf("the agent's tunnel is still up after the delete; its log since:\n%s", after)
		}
		return nil
	})
	eventually(t, time.Minute, func() error {
		if code := e.controlDial(t, e.labID, name, cred2); code != http.StatusUnauthorized && code != http.StatusForbidden {
			return fmt.Errorf("the deleted edge's credential got %d", code)
		}
		return nil
	})
	e.createEdge(t, labWorkspace, name, v1alpha1.TypeKubernetes)
	time.Sleep(10 * time.Second) // the agent retries within its backoff
	ed, err := e.getEdge(t, labWorkspace, name)
	if err != nil || ed.Status.Phase == v1alpha1.PhaseReady || conditionTrue(ed.Status.Conditions, v1alpha1.ConditionConnected) {
		t.Errorf("the old agent connected to a new Edge of the same name: %v %+v", err, ed)
	}
	if code := e.controlDial(t, e.labID, name, cred2); code != http.StatusUnauthorized && code != http.StatusForbidden {
		t.Errorf("the old credential is accepted for the new Edge: %d", code)
	}
}

func hasCredential(entries []os.DirEntry) bool {
	for _, en := range entries {
		if !en.IsDir() && en.Name() != "state.json" && !strings.HasPrefix(en.Name(), ".") {
			return true
		}
	}
	return false
}

// startExpiryCheck mints a token now and returns the subtest that, once
// the token's TTL has passed, checks it is refused and never connects.
func (e *env) startExpiryCheck(t *testing.T) func(*testing.T, *env) {
	t.Helper()
	const name = "lab-expiry"
	e.createEdge(t, labWorkspace, name, v1alpha1.TypeKubernetes)
	bundle, token := e.bundle(t, e.labID, labWorkspace, name, v1alpha1.TypeKubernetes, e.hub.URL)
	minted := time.Now()
	return func(t *testing.T, e *env) {
		if wait := joinTokenTTL + 5*time.Second - time.Since(minted); wait > 0 {
			time.Sleep(wait)
		}
		if code, body := e.join(t, e.labID, name, token); code != http.StatusUnauthorized && code != http.StatusForbidden {
			t.Errorf("an expired join token: %d %s", code, body)
		}
		a := startAgent(t, agentOptions{join: bundle, kubeconfig: e.agentKubeconfig})
		time.Sleep(8 * time.Second)
		if ed, err := e.getEdge(t, labWorkspace, name); err != nil || ed.Status.Phase == v1alpha1.PhaseReady {
			t.Errorf("an agent with an expired token connected: %v %+v", err, ed)
		}
		if entries, _ := os.ReadDir(a.StateDir); hasCredential(entries) {
			t.Errorf("an agent with an expired token saved a credential")
		}
	}
}
