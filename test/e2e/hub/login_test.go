package hub

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/wharfhub/wharf/test/idp"
)

var loginUser = idp.User{Username: "ada", Password: "lovelace", Email: "ada@example.com", Groups: []string{"dev", "ops"}}

const cliRedirect = "http://127.0.0.1:47001/callback"

// loginHub starts an IdP with the hub's confidential client and the CLI's
// public one, and a hub configured for both, with token login enabled.
func loginHub(t *testing.T, extraArgs ...string) (*hubProc, *idp.IdP) {
	t.Helper()
	port := freePort(t)
	hubURL := fmt.Sprintf("https://127.0.0.1:%d", port)
	p := idp.StartWith(t, idp.Options{
		Clients: []idp.Client{
			{ID: "wharf", Secret: "hub-client-secret", RedirectURIs: []string{hubURL + "/auth/callback"}},
			{ID: "wharf-cli", RedirectURIs: []string{"http://127.0.0.1/callback"}},
		},
		Users: []idp.User{loginUser},
	})
	secret := filepath.Join(t.TempDir(), "client-secret")
	if err := os.WriteFile(secret, []byte("hub-client-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{
		"--oidc-issuer-url=" + p.URL, "--oidc-client-id=wharf", "--oidc-ca-file=" + p.CAFile,
		"--oidc-client-secret-file=" + secret, "--oidc-cli-client-id=wharf-cli",
		"--oidc-groups-claim=groups", "--enable-token-login", "-v=4",
	}, extraArgs...)
	h := startHub(t, hubOptions{port: port, extraArgs: args})
	return h, p
}

// recorder keeps every response, for Set-Cookie attributes and URLs that
// a cookie jar and redirects hide.
type recorder struct {
	rt   http.RoundTripper
	mu   sync.Mutex
	seen []*http.Response
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.rt.RoundTrip(req)
	if err == nil {
		r.mu.Lock()
		r.seen = append(r.seen, resp)
		r.mu.Unlock()
	}
	return resp, err
}

func (r *recorder) last(path string) *http.Response {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.seen) - 1; i >= 0; i-- {
		if r.seen[i].Request.URL.Path == path {
			return r.seen[i]
		}
	}
	return nil
}

// webBrowser is a client with a cookie jar trusting the hub and the IdP.
type webBrowser struct {
	*http.Client
	rec *recorder
	h   *hubProc
}

func newBrowser(t *testing.T, h *hubProc, p *idp.IdP) *webBrowser {
	t.Helper()
	pool := x509.NewCertPool()
	for _, f := range []string{filepath.Join(h.opts.dataDir, "pki", "serving.crt"), p.CAFile} {
		pem, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pool.AppendCertsFromPEM(pem)
	}
	jar, _ := cookiejar.New(nil)
	rec := &recorder{rt: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	return &webBrowser{Client: &http.Client{Jar: jar, Transport: rec, Timeout: 30 * time.Second}, rec: rec, h: h}
}

// loginPage follows /auth/login to the IdP's login form and returns its URL.
func (b *webBrowser) loginPage(t *testing.T, then string) string {
	t.Helper()
	resp, err := b.Get(b.h.URL + "/auth/login?then=" + url.QueryEscape(then))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/login" {
		t.Fatalf("/auth/login: %d at %s, want the IdP login form", resp.StatusCode, resp.Request.URL.Redacted())
	}
	return resp.Request.URL.String()
}

func (b *webBrowser) call(t *testing.T, method, path, body string, hdr map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, b.h.URL+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// TestBrowserLogin drives the real hub binary through a browser login at
// the real IdP, then uses the session cookie against the API.
func TestBrowserLogin(t *testing.T) {
	t.Parallel()
	h, p := loginHub(t, "--provider", "example="+exampleProvider(t))
	// The user may edit in root's default namespace and use root's
	// providers, through RBAC.
	h.mustKubectl("root", "create", "rolebinding", "ada-edit", "-n", "default", "--clusterrole=edit", "--user=ada@example.com")
	h.mustKubectl("root", "create", "clusterrolebinding", "ada-view", "--clusterrole=view", "--user=ada@example.com")

	b := newBrowser(t, h, p)
	page := b.loginPage(t, "/version?x=1")
	resp, err := idp.SubmitLogin(context.Background(), b.Client, page, loginUser.Username, loginUser.Password)
	if err != nil {
		t.Fatal(err)
	}
	landing, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/version" || !strings.Contains(string(landing), "gitVersion") {
		t.Fatalf("after login landed at %s: %d %s", resp.Request.URL.Redacted(), resp.StatusCode, landing)
	}
	cb := b.rec.last("/auth/callback")
	var session *http.Cookie
	for _, c := range cb.Cookies() {
		if c.Name == "wharf_session" {
			session = c
		}
	}
	if session == nil || !session.HttpOnly || !session.Secure || session.SameSite != http.SameSiteLaxMode || session.Path != "/" || session.MaxAge <= 0 {
		t.Fatalf("wharf_session cookie: %+v", session)
	}
	for _, r := range b.rec.seen {
		if u := r.Request.URL.String(); strings.Contains(u, session.Value) || strings.Contains(u, "code_verifier") {
			t.Errorf("a secret went into a URL: %s", r.Request.URL.Redacted())
		}
	}

	// kubectl-equivalent reads with the cookie.
	if code, body := b.call(t, http.MethodGet, "/clusters/root/api/v1/namespaces/default/configmaps", "", nil); code != http.StatusOK || !strings.Contains(body, `"kind":"ConfigMapList"`) {
		t.Fatalf("list configmaps with cookie: %d %s", code, body)
	}
	code, body := b.call(t, http.MethodGet, "/auth/session", "", nil)
	var info struct {
		User      string   `json:"user"`
		Groups    []string `json:"groups"`
		CSRFToken string   `json:"csrfToken"`
		Expiry    string   `json:"expiry"`
	}
	if err := json.Unmarshal([]byte(body), &info); code != http.StatusOK || err != nil || info.User != "ada@example.com" || info.CSRFToken == "" || info.Expiry == "" {
		t.Fatalf("/auth/session: %d %s", code, body)
	}

	cm := func(name string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"},"data":{"k":"v"}}`
	}
	const cms = "/clusters/root/api/v1/namespaces/default/configmaps"
	for what, hdr := range map[string]map[string]string{
		"no CSRF header": {"Origin": h.URL},
		"wrong token":    {"Origin": h.URL, "X-Wharf-CSRF": info.CSRFToken + "x"},
		"foreign Origin": {"Origin": "https://evil.example", "X-Wharf-CSRF": info.CSRFToken},
		"no Origin":      {"X-Wharf-CSRF": info.CSRFToken},
	} {
		if code, body := b.call(t, http.MethodPost, cms, cm("refused"), hdr); code != http.StatusForbidden || !strings.Contains(body, "cross-site") {
			t.Errorf("POST with %s: %d %s, want the CSRF 403", what, code, body)
		}
	}
	csrf := map[string]string{"Origin": h.URL, "X-Wharf-CSRF": info.CSRFToken}
	if code, body := b.call(t, http.MethodPost, cms, cm("from-browser"), csrf); code != http.StatusCreated {
		t.Fatalf("POST with Origin and CSRF token: %d %s", code, body)
	}
	// RBAC still decides: the binding is only in default.
	if code, body := b.call(t, http.MethodPost, "/clusters/root/api/v1/namespaces/kube-system/configmaps", cm("x"), csrf); code != http.StatusForbidden || strings.Contains(body, "cross-site") {
		t.Errorf("POST outside the binding: %d %s, want RBAC's 403", code, body)
	}
	if out := h.mustKubectl("root", "get", "configmap", "from-browser", "-n", "default", "-o", "jsonpath={.data.k}"); out != "v" {
		t.Errorf("configmap created by the browser: %q", out)
	}

	// The provider proxy: the cookie authenticates, the same CSRF
	// defence guards state changes.
	const whoami = "/services/providers/example/whoami"
	eventually(t, 60*time.Second, func() error {
		if code, body := b.call(t, http.MethodGet, whoami, "", nil); code != http.StatusOK || !strings.Contains(body, `"User":"ada@example.com"`) {
			return fmt.Errorf("provider whoami with cookie: %d %s", code, body)
		}
		return nil
	})
	if code, body := b.call(t, http.MethodPost, whoami, "", map[string]string{"Origin": h.URL}); code != http.StatusForbidden || !strings.Contains(body, "cross-site") {
		t.Errorf("POST to provider without CSRF token: %d %s, want the CSRF 403", code, body)
	}
	if code, body := b.call(t, http.MethodPost, whoami, "", csrf); code != http.StatusMethodNotAllowed {
		t.Errorf("POST to provider with CSRF token: %d %s, want the provider's own 405", code, body)
	}

	// A bad bearer token never falls back to the cookie.
	if code, _ := b.call(t, http.MethodGet, cms, "", map[string]string{"Authorization": "Bearer nonsense"}); code != http.StatusUnauthorized {
		t.Errorf("bad bearer with a good cookie: %d, want 401", code)
	}

	// Replay of the callback (history, leaked URL): refused, in this
	// browser and with the pre-login cookie put back by hand.
	if code, _ := b.call(t, http.MethodGet, cb.Request.URL.RequestURI(), "", nil); code != http.StatusBadRequest {
		t.Errorf("replayed callback: %d, want 400", code)
	}
	req, _ := http.NewRequest(http.MethodGet, cb.Request.URL.String(), nil)
	for _, c := range b.rec.last("/auth/login").Cookies() {
		req.AddCookie(c)
	}
	if resp, err := newBrowser(t, h, p).Do(req); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("replayed callback with its pre-login cookie: %v %v, want 400", resp.StatusCode, err)
	}

	// Logout needs the CSRF defence too, then the cookie is dead even
	// when presented by hand.
	if code, _ := b.call(t, http.MethodPost, "/auth/logout", "", nil); code != http.StatusForbidden {
		t.Errorf("logout without CSRF: %d, want 403", code)
	}
	if code, body := b.call(t, http.MethodPost, "/auth/logout", "", csrf); code != http.StatusNoContent {
		t.Fatalf("logout: %d %s", code, body)
	}
	req, _ = http.NewRequest(http.MethodGet, h.URL+cms, nil)
	req.AddCookie(&http.Cookie{Name: "wharf_session", Value: session.Value})
	if resp, err := newBrowser(t, h, p).Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("cookie after logout: %v %v, want 401", resp.StatusCode, err)
	}
	if log := h.log.String(); strings.Contains(log, session.Value) || strings.Contains(log, info.CSRFToken) {
		t.Error("the hub log contains the session cookie or CSRF token")
	}
}

// TestBrowserLoginRefusals: tampered state, a foreign callback and open
// redirects are refused by the real hub.
func TestBrowserLoginRefusals(t *testing.T) {
	t.Parallel()
	h, p := loginHub(t)
	b := newBrowser(t, h, p)
	page := b.loginPage(t, "/version")
	b.CheckRedirect = func(r *http.Request, _ []*http.Request) error {
		if r.URL.Path == "/auth/callback" {
			return http.ErrUseLastResponse
		}
		return nil
	}
	resp, err := idp.SubmitLogin(context.Background(), b.Client, page, loginUser.Username, loginUser.Password)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cb, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || cb.Path != "/auth/callback" {
		t.Fatalf("IdP did not redirect to the callback: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	b.CheckRedirect = nil
	q := cb.Query()
	state := q.Get("state")
	q.Set("state", state[:len(state)-3]+"AAA")
	tampered := *cb
	tampered.RawQuery = q.Encode()
	if code, body := b.call(t, http.MethodGet, tampered.RequestURI(), "", nil); code != http.StatusBadRequest {
		t.Errorf("tampered state: %d %s, want 400", code, body)
	}
	if code, _ := newBrowser(t, h, p).call(t, http.MethodGet, cb.RequestURI(), "", nil); code != http.StatusBadRequest {
		t.Errorf("callback in another browser: %d, want 400", code)
	}
	if code, body := b.call(t, http.MethodGet, cb.RequestURI(), "", nil); code != http.StatusOK || !strings.Contains(body, "gitVersion") {
		t.Errorf("genuine callback after the refusals: %d %s", code, body)
	}
	for _, then := range []string{"https://evil.example", "//evil.example", "/\\evil.example", "/%2F%2Fevil.example"} {
		resp, err := newBrowser(t, h, p).Get(h.URL + "/auth/login?then=" + url.QueryEscape(then))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || resp.Request.URL.Host != strings.TrimPrefix(h.URL, "https://") {
			t.Errorf("then=%s: %d at %s, want 400 at the hub", then, resp.StatusCode, resp.Request.URL.Redacted())
		}
	}
}

// cliIDToken gets an ID token for the CLI's public client straight from
// the IdP (code flow with PKCE and a loopback redirect, as the CLI does).
func cliIDToken(t *testing.T, h *hubProc, p *idp.IdP) string {
	t.Helper()
	b := newBrowser(t, h, p)
	ctx := oidc.ClientContext(context.Background(), b.Client)
	prov, err := oidc.NewProvider(ctx, p.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg := oauth2.Config{ClientID: "wharf-cli", Endpoint: prov.Endpoint(), RedirectURL: cliRedirect, Scopes: []string{"openid", "email", "groups"}}
	verifier := oauth2.GenerateVerifier()
	b.CheckRedirect = func(r *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(r.URL.String(), cliRedirect) {
			return http.ErrUseLastResponse
		}
		return nil
	}
	resp, err := b.Get(cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = idp.SubmitLogin(ctx, b.Client, resp.Request.URL.String(), loginUser.Username, loginUser.Password)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	tok, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, b.Client), loc.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		t.Fatal("no ID token from the IdP")
	}
	return raw
}

// TestCLIBootstrap: /.well-known/wharf, an ID token of the CLI client as
// a bearer, and /auth/token-login's kubeconfig used by real kubectl.
func TestCLIBootstrap(t *testing.T) {
	t.Parallel()
	h, p := loginHub(t)
	code, body, err := h.getAs("", "/.well-known/wharf")
	var doc struct {
		HubURL string `json:"hubURL"`
		OIDC   *struct {
			IssuerURL           string   `json:"issuerURL"`
			ClientID            string   `json:"clientID"`
			Scopes              []string `json:"scopes"`
			DeviceAuthorization bool     `json:"deviceAuthorization"`
		} `json:"oidc"`
		TokenLogin bool `json:"tokenLogin"`
	}
	if err != nil || code != http.StatusOK || json.Unmarshal([]byte(body), &doc) != nil {
		t.Fatalf("/.well-known/wharf: %d %s %v", code, body, err)
	}
	if doc.HubURL != h.URL || doc.OIDC == nil || doc.OIDC.IssuerURL != p.URL || doc.OIDC.ClientID != "wharf-cli" ||
		strings.Join(doc.OIDC.Scopes, " ") != "openid email profile groups offline_access" || doc.OIDC.DeviceAuthorization || !doc.TokenLogin {
		t.Fatalf("/.well-known/wharf = %s", body)
	}

	idTok := cliIDToken(t, h, p)
	eventually(t, 30*time.Second, func() error {
		if code, body, err := h.getAs(idTok, "/version"); code != http.StatusOK {
			return fmt.Errorf("ID token of the CLI client as bearer: %d %s %v", code, body, err)
		}
		return nil
	})
	if name, groups := selfReview(t, h, idTok); name != "ada@example.com" || strings.Join(groups, ",") != "dev,ops,system:authenticated" {
		t.Errorf("CLI ID token identity: %s %v", name, groups)
	}

	post := func(token string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, h.URL+"/auth/token-login", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := h.client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for what, tok := range map[string]string{"no token": "", "wrong token": "not-the-admin-token", "ID token": idTok} {
		if code, body := post(tok); code != http.StatusUnauthorized {
			t.Errorf("token-login with %s: %d %s, want 401", what, code, body)
		}
	}
	code, kubeconfig := post(h.Token)
	if code != http.StatusOK || !strings.Contains(kubeconfig, "server: "+h.URL+"/clusters/root") {
		t.Fatalf("token-login: %d %s", code, kubeconfig)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(h.kubectlBin, "--kubeconfig", path, "get", "namespaces", "-o", "name").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "namespace/default") {
		t.Fatalf("kubectl with the token-login kubeconfig: %v\n%s", err, out)
	}
	if strings.Contains(h.log.String(), idTok) {
		t.Error("hub log contains the ID token")
	}

	// Login endpoints are rate-limited per client address (burst 20 by
	// default): a flood of guesses ends in 429 with Retry-After.
	limited := false
	for range 40 {
		req, _ := http.NewRequest(http.MethodPost, h.URL+"/auth/token-login", nil)
		req.Header.Set("Authorization", "Bearer guess")
		resp, err := h.client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			limited = resp.Header.Get("Retry-After") != "" && resp.Header.Get("Content-Type") == "application/json"
			break
		}
	}
	if !limited {
		t.Error("40 token-login attempts from one address were never limited with a 429 Status and Retry-After")
	}
}
