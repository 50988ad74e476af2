package edges

import (
	"strings"
	"testing"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
)

// testUpgradesByteExact: exec, attach and port-forward upgrade requests,
// over SPDY and over websockets, pass through the edge byte for byte. The
// agent's target is the upgrade echo (no kubelet runs here); the echo
// also shows what crossed the tunnel: the agent's own credential and
// alice's impersonation, never alice's hub token.
func testUpgradesByteExact(t *testing.T, e *env) {
	_, _, ed := e.connectEdge(t, "lab-echo", v1alpha1.TypeKubernetes, agentOptions{kubeconfig: e.echo.Kubeconfig})
	base := ed.Status.URL + "/api/v1/namespaces/default/pods/p"
	cases := []struct{ name, path string }{
		{"exec", "/exec?command=sh&stdin=true&stdout=true"},
		{"attach", "/attach?stdin=true&stdout=true"},
		{"portforward", "/portforward?ports=8080"},
	}
	for _, c := range cases {
		if err := spdyEcho(t, e.hub.CA, base+c.path, aliceToken); err != nil {
			t.Errorf("%s over SPDY: %v", c.name, err)
		}
		if err := websocketEcho(t, e.hub.CA, base+c.path, aliceToken); err != nil {
			t.Errorf("%s over websocket: %v", c.name, err)
		}
	}
	for _, c := range cases {
		suffix := strings.SplitN(c.path, "?", 2)[0]
		r, ok := e.echo.lastTo(suffix)
		if !ok {
			t.Errorf("%s never reached the echo", c.name)
			continue
		}
		if got := r.Header.Get("Authorization"); got != "Bearer "+echoAgentToken {
			t.Errorf("%s reached the edge with Authorization %q, want the agent's own", c.name, got)
		}
		if got := r.Header.Get("Impersonate-User"); got != "alice" {
			t.Errorf("%s reached the edge as Impersonate-User %q", c.name, got)
		}
		for k, vs := range r.Header {
			for _, v := range vs {
				if strings.Contains(v, aliceToken) {
					t.Errorf("alice's hub token crossed the tunnel in %s: %s", c.name, k)
				}
				if strings.HasPrefix(strings.ToLower(k), "x-kedge-") {
					t.Errorf("hub identity header %s crossed the tunnel", k)
				}
			}
			if strings.HasPrefix(strings.ToLower(k), "impersonate-group") {
				for _, v := range vs {
					if strings.HasPrefix(v, "system:") {
						t.Errorf("%s: impersonated hub group %q", c.name, v)
					}
				}
			}
		}
	}
}
