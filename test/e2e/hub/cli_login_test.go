package hub

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/test/idp"
)

// cliIDTokenLifetime is short so that the refresh through the kubeconfig's
// exec plugin is exercised within the test.
const cliIDTokenLifetime = 20 * time.Second

var cliUser = idp.User{Username: "ada", Password: "lovelace", Email: "ada@example.com", Groups: []string{"dev"}}

// cliEnv is a hub with OIDC against a real IdP that offers a public client
// "wharf-cli" with loopback redirects and the device flow.
type cliEnv struct {
	h *hubProc
	p *idp.IdP
}

func startCLIEnv(t *testing.T) *cliEnv {
	t.Helper()
	p := idp.StartWith(t, idp.Options{
		Clients:         []idp.Client{{ID: "wharf-cli", RedirectURIs: []string{"http://127.0.0.1/callback"}}},
		Users:           []idp.User{cliUser},
		DeviceFlow:      true,
		IDTokenLifetime: cliIDTokenLifetime,
	})
	h := startHub(t, hubOptions{extraArgs: []string{
		"--oidc-issuer-url=" + p.URL, "--oidc-client-id=wharf-cli", "--oidc-ca-file=" + p.CAFile,
	}})
	h.mustKubectl("root", "create", "clusterrolebinding", "ada-view", "--clusterrole=view", "--user="+cliUser.Email)
	return &cliEnv{h: h, p: p}
}

// loginArgs are the flags of `wharf login` writing into dir. The issuer
// and client id are given explicitly, so this does not depend on the
// hub's /.well-known/wharf.
func (e *cliEnv) loginArgs(dir string, extra ...string) []string {
	return append([]string{"login", e.h.URL,
		"--issuer=" + e.p.URL, "--client-id=wharf-cli", "--oidc-ca-file=" + e.p.CAFile,
		"--certificate-authority=" + filepath.Join(e.h.opts.dataDir, "pki", "serving.crt"),
		"--kubeconfig=" + filepath.Join(dir, "kubeconfig"), "--cache-dir=" + filepath.Join(dir, "cache"),
		"--no-browser", "--timeout=2m"}, extra...)
}

// kubectl runs the real kubectl with the kubeconfig wharf login wrote.
func (e *cliEnv) kubectl(dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.h.kubectlBin, append([]string{"--kubeconfig", filepath.Join(dir, "kubeconfig")}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+filepath.Join(dir, "kubecache"))
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// browserLogin plays the person at the browser: open the URL, log in at
// the IdP's form, follow the redirects to the CLI's loopback listener.
func browserLogin(t *testing.T, p *idp.IdP, authURL string) {
	t.Helper()
	b := browser(t, p)
	resp, err := b.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("authorization URL answered %d at %s", resp.StatusCode, resp.Request.URL)
	}
	resp, err = idp.SubmitLogin(context.Background(), b, resp.Request.URL.String(), cliUser.Username, cliUser.Password)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Host == strings.TrimPrefix(p.URL, "https://") {
		t.Fatalf("login ended at %d %s, want the CLI's loopback page", resp.StatusCode, resp.Request.URL)
	}
}

// checkNoTokenPrinted fails if the CLI's output holds any cached token.
func checkNoTokenPrinted(t *testing.T, c *cliProc, e cacheEntry) {
	t.Helper()
	out := c.out.String()
	for what, tok := range map[string]string{"ID token": e.IDToken, "refresh token": e.RefreshToken} {
		if tok == "" || strings.Contains(out, tok) {
			t.Errorf("%s missing from the cache or printed by wharf login", what)
		}
	}
}

// eventuallyKubectl runs kubectl until it succeeds (RBAC and the hub's
// OIDC discovery settle asynchronously).
func (e *cliEnv) eventuallyKubectl(t *testing.T, dir string, args ...string) string {
	t.Helper()
	var out string
	eventually(t, 60*time.Second, func() error {
		var err error
		if out, err = e.kubectl(dir, args...); err != nil {
			return fmt.Errorf("kubectl %v: %v: %s", args, err, out)
		}
		return nil
	})
	return out
}

// TestCLILoopbackLogin logs in with `wharf login` (authorization code +
// PKCE via the loopback redirect), then uses the written kubeconfig with
// real kubectl through the `wharf credential` exec plugin, including a
// refresh after the ID token expired.
func TestCLILoopbackLogin(t *testing.T) {
	e := startCLIEnv(t)
	dir := t.TempDir()
	c := startCLI(t, e.loginArgs(dir)...)
	authURL := c.line(t, "Open this URL in your browser to log in: ")
	if u, err := url.Parse(authURL); err != nil || u.Query().Get("code_challenge_method") != "S256" || u.Query().Get("state") == "" {
		t.Fatalf("authorization URL %q lacks PKCE S256 or state", authURL)
	}
	browserLogin(t, e.p, authURL)
	if err := c.wait(); err != nil {
		t.Fatalf("wharf login: %v", err)
	}
	first, file := readCache(t, filepath.Join(dir, "cache"))
	checkNoTokenPrinted(t, c, first)
	for path, mode := range map[string]os.FileMode{filepath.Dir(file): 0o700, file: 0o600, filepath.Join(dir, "kubeconfig"): 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %v (%v), want %v", path, fi.Mode().Perm(), err, mode)
		}
	}
	kc, err := os.ReadFile(filepath.Join(dir, "kubeconfig"))
	if err != nil || strings.Contains(string(kc), first.IDToken) || !strings.Contains(string(kc), "command: "+wharfBinary(t)) {
		t.Fatalf("kubeconfig must run the wharf exec plugin and hold no token:\n%s", kc)
	}

	if out := e.eventuallyKubectl(t, dir, "auth", "whoami"); !strings.Contains(out, cliUser.Email) {
		t.Errorf("kubectl auth whoami = %q, want %s", out, cliUser.Email)
	}
	e.eventuallyKubectl(t, dir, "get", "namespaces")

	// Let the cached ID token expire; kubectl must keep working, the
	// plugin having refreshed the token (and the IdP rotated the refresh
	// token). The kubectl runs above may already have refreshed once.
	before, _ := readCache(t, filepath.Join(dir, "cache"))
	time.Sleep(time.Until(before.Expiry) + time.Second)
	if out, err := e.kubectl(dir, "get", "namespaces"); err != nil {
		t.Fatalf("kubectl after the ID token expired: %v\n%s", err, out)
	}
	after, _ := readCache(t, filepath.Join(dir, "cache"))
	if after.IDToken == before.IDToken || after.RefreshToken == before.RefreshToken || !after.Expiry.After(before.Expiry) {
		t.Errorf("cache not refreshed: expiry %v -> %v, ID token changed=%v, refresh token changed=%v",
			before.Expiry, after.Expiry, after.IDToken != before.IDToken, after.RefreshToken != before.RefreshToken)
	}
	if out, err := e.kubectl(dir, "auth", "whoami"); err != nil || !strings.Contains(out, cliUser.Email) {
		t.Errorf("kubectl auth whoami with the refreshed token: %v %s", err, out)
	}
}

// TestCLIDeviceLogin logs in with the device code flow: the person opens
// the verification URI in a browser and logs in there.
func TestCLIDeviceLogin(t *testing.T) {
	e := startCLIEnv(t)
	dir := t.TempDir()
	c := startCLI(t, e.loginArgs(dir, "--device")...)
	code := c.line(t, "Enter the code ")
	complete := c.line(t, "or open ")
	if !strings.Contains(complete, url.QueryEscape(code)) {
		t.Fatalf("verification URI %q does not carry the user code", complete)
	}
	b := browser(t, e.p)
	resp, err := idp.SubmitLogin(context.Background(), b, complete, cliUser.Username, cliUser.Password)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("device approval: %d", resp.StatusCode)
	}
	if err := c.wait(); err != nil {
		t.Fatalf("wharf login --device: %v", err)
	}
	tok, _ := readCache(t, filepath.Join(dir, "cache"))
	checkNoTokenPrinted(t, c, tok)
	if out := e.eventuallyKubectl(t, dir, "auth", "whoami"); !strings.Contains(out, cliUser.Email) {
		t.Errorf("kubectl auth whoami = %q, want %s", out, cliUser.Email)
	}
}

// TestCLILoopbackStateMismatch sends the CLI's loopback listener a callback
// with a foreign state: it is refused and the login fails without writing
// a kubeconfig or caching anything.
func TestCLILoopbackStateMismatch(t *testing.T) {
	e := startCLIEnv(t)
	dir := t.TempDir()
	c := startCLI(t, e.loginArgs(dir)...)
	u, err := url.Parse(c.line(t, "Open this URL in your browser to log in: "))
	if err != nil {
		t.Fatal(err)
	}
	cb, err := url.Parse(u.Query().Get("redirect_uri"))
	if err != nil || cb.Hostname() != "127.0.0.1" || cb.Port() == "" {
		t.Fatalf("redirect_uri %q is not a loopback URL with a port", u.Query().Get("redirect_uri"))
	}
	cb.RawQuery = url.Values{"code": {"stolen"}, "state": {"forged"}}.Encode()
	resp, err := http.Get(cb.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("callback with a forged state: %d, want 400", resp.StatusCode)
	}
	if err := c.wait(); err == nil {
		t.Fatal("wharf login succeeded after a forged callback")
	}
	for _, p := range []string{filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "cache")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s exists after a refused login", p)
		}
	}
}
