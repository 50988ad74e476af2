package ws

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/wharfhub/wharf/test/kube"
	"github.com/wharfhub/wharf/test/testutil"
)

// person is a static-token user of the hub with their own kubeconfig,
// written by `wharf login --token-stdin` as a person would.
type person struct {
	name, token, kubeconfig string
	hub                     *testutil.Hub
}

// startHub runs a hub whose token file knows alice and bob.
func startHub(t *testing.T) (*testutil.Hub, *person, *person) {
	t.Helper()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte("alice-ws-token,alice,alice-uid,\"devs\"\nbob-ws-token,bob,bob-uid,\"devs\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := testutil.StartHub(t, testutil.HubOptions{Args: []string{"--token-auth-file", tokens, "--enable-token-login"}})
	alice := &person{name: "alice", token: "alice-ws-token", kubeconfig: filepath.Join(dir, "alice.kubeconfig"), hub: h}
	bob := &person{name: "bob", token: "bob-ws-token", kubeconfig: filepath.Join(dir, "bob.kubeconfig"), hub: h}
	for _, p := range []*person{alice, bob} {
		if out, errOut, code := testutil.Run(t, nil, p.token, testutil.Binary(t, "wharf"), "login", h.URL, "--token-stdin",
			"--certificate-authority", h.CAFile, "--kubeconfig", p.kubeconfig); code != 0 {
			t.Fatalf("wharf login as %s: exit %d\n%s%s", p.name, code, out, errOut)
		}
	}
	return h, alice, bob
}

// ws runs `wharf ws <args>` with p's kubeconfig.
func (p *person) ws(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return testutil.Run(t, nil, "", testutil.Binary(t, "wharf"), append(append([]string{"ws"}, args...), "--kubeconfig", p.kubeconfig)...)
}

// mustWS is ws that must succeed; it returns stdout.
func (p *person) mustWS(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := p.ws(t, args...)
	if code != 0 {
		t.Fatalf("wharf ws %s as %s: exit %d\n%s%s", strings.Join(args, " "), p.name, code, out, errOut)
	}
	return out
}

// server is the current context's server in p's kubeconfig.
func (p *person) server(t *testing.T) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(p.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster].Server
}

// kubectl runs the fixture's kubectl with p's kubeconfig, unchanged, so
// it goes wherever `wharf ws` pointed the context.
func (p *person) kubectl(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return testutil.Run(t, nil, "", kube.KubectlPath(t), append([]string{"--kubeconfig", p.kubeconfig}, args...)...)
}

// admin runs kubectl as the hub admin in workspace ws.
func admin(t *testing.T, h *testutil.Hub, ws string, stdin string, args ...string) string {
	t.Helper()
	out, errOut, code := testutil.Run(t, nil, stdin, kube.KubectlPath(t),
		append([]string{"--kubeconfig", h.AdminKubeconfig, "--server", h.URL + "/clusters/" + ws}, args...)...)
	if code != 0 {
		t.Fatalf("kubectl %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}
