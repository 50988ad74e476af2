package hub

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhub/wharf/test/idp"
)

// TestCLIWellKnownLogin: `wharf login <hub-url>` with nothing but the hub
// URL and CAs learns issuer, client id and scopes from /.well-known/wharf,
// logs in through the loopback flow and the device flow, and kubectl then
// works through the exec plugin.
func TestCLIWellKnownLogin(t *testing.T) {
	p := idp.StartWith(t, idp.Options{
		Clients:    []idp.Client{{ID: "wharf-cli", RedirectURIs: []string{"http://127.0.0.1/callback"}}},
		Users:      []idp.User{cliUser},
		DeviceFlow: true,
	})
	h := startHub(t, hubOptions{extraArgs: []string{
		"--oidc-issuer-url=" + p.URL, "--oidc-client-id=wharf-cli", "--oidc-ca-file=" + p.CAFile,
	}})
	h.mustKubectl("root", "create", "clusterrolebinding", "ada-view", "--clusterrole=view", "--user="+cliUser.Email)
	e := &cliEnv{h: h, p: p}
	args := func(dir string, extra ...string) []string {
		return append([]string{"login", h.URL, "--oidc-ca-file=" + p.CAFile,
			"--certificate-authority=" + filepath.Join(h.opts.dataDir, "pki", "serving.crt"),
			"--kubeconfig=" + filepath.Join(dir, "kubeconfig"), "--cache-dir=" + filepath.Join(dir, "cache"),
			"--no-browser", "--timeout=2m"}, extra...)
	}

	t.Run("loopback", func(t *testing.T) {
		dir := t.TempDir()
		c := startCLI(t, args(dir)...)
		authURL := c.line(t, "Open this URL in your browser to log in: ")
		if !strings.HasPrefix(authURL, p.URL+"/authorize?") || !strings.Contains(authURL, "client_id=wharf-cli") || !strings.Contains(authURL, "offline_access") {
			t.Fatalf("authorization URL %q is not the hub's IdP, CLI client and scopes", authURL)
		}
		browserLogin(t, p, authURL)
		if err := c.wait(); err != nil {
			t.Fatalf("wharf login: %v", err)
		}
		tok, _ := readCache(t, filepath.Join(dir, "cache"))
		checkNoTokenPrinted(t, c, tok)
		if out := e.eventuallyKubectl(t, dir, "auth", "whoami"); !strings.Contains(out, cliUser.Email) {
			t.Errorf("kubectl auth whoami = %q", out)
		}
	})
	t.Run("device", func(t *testing.T) {
		dir := t.TempDir()
		c := startCLI(t, args(dir, "--device")...)
		if err := p.ApproveDevice(t.Context(), c.line(t, "Enter the code "), cliUser.Username); err != nil {
			t.Fatal(err)
		}
		if err := c.wait(); err != nil {
			t.Fatalf("wharf login --device: %v", err)
		}
		if out := e.eventuallyKubectl(t, dir, "auth", "whoami"); !strings.Contains(out, cliUser.Email) {
			t.Errorf("kubectl auth whoami = %q", out)
		}
	})
}

// TestCLITokenLogin: `wharf login --token-stdin` exchanges the admin token
// at /auth/token-login (dev mode) for a kubeconfig context that real
// kubectl uses; a wrong token is refused and writes nothing.
func TestCLITokenLogin(t *testing.T) {
	h := startHub(t, hubOptions{extraArgs: []string{"--enable-token-login"}})
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	login := func(token string) (string, error) {
		cmd := exec.Command(wharfBinary(t), "login", h.URL, "--token-stdin", "--kubeconfig="+kc,
			"--certificate-authority="+filepath.Join(h.opts.dataDir, "pki", "serving.crt"))
		cmd.Stdin = strings.NewReader(token + "\n")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := login("not-a-token"); err == nil {
		t.Fatalf("token login with a wrong token succeeded: %s", out)
	}
	if _, err := os.Stat(kc); !os.IsNotExist(err) {
		t.Fatal("a refused token login wrote a kubeconfig")
	}
	out, err := login(h.Token)
	if err != nil {
		t.Fatalf("wharf login --token-stdin: %v\n%s", err, out)
	}
	if strings.Contains(out, h.Token) {
		t.Error("wharf login printed the token")
	}
	if out, err := (&cliEnv{h: h}).kubectl(dir, "get", "namespaces", "-o", "name"); err != nil || !strings.Contains(out, "namespace/default") {
		t.Fatalf("kubectl with the token-login context: %v\n%s", err, out)
	}
}
