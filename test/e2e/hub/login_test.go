package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/test/idp"
)

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
	cb := b.rec.Last("/auth/callback")
	var session *http.Cookie
	for _, c := range cb.Cookies() {
		if c.Name == "__Host-wharf_session" {
			session = c
		}
	}
	if session == nil || !session.HttpOnly || !session.Secure || session.SameSite != http.SameSiteLaxMode || session.Path != "/" || session.MaxAge <= 0 {
		t.Fatalf("__Host-wharf_session cookie: %+v", session)
	}
	// Issue 11 finding 14: every cookie the hub sets is bound to its exact
	// origin, and the same session under the old, plantable name does not
	// authenticate.
	for _, r := range b.rec.Responses() {
		if !strings.HasPrefix(r.Request.URL.String(), h.URL) {
			continue
		}
		for _, c := range r.Cookies() {
			if !strings.HasPrefix(c.Name, "__Host-") || !c.Secure || c.Path != "/" || c.Domain != "" {
				t.Errorf("%s sets cookie %s without the __Host- binding: %+v", r.Request.URL.Path, c.Name, c)
			}
		}
	}
	planted, _ := http.NewRequest(http.MethodGet, h.URL+"/clusters/root/api/v1/namespaces/default/configmaps", nil)
	planted.AddCookie(&http.Cookie{Name: "wharf_session", Value: session.Value})
	if resp, err := newBrowser(t, h, p).Do(planted); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the session under the unprefixed name wharf_session: %v %v, want 401", resp, err)
	}
	for _, r := range b.rec.Responses() {
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
	for _, c := range b.rec.Last("/auth/login").Cookies() {
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
	req.AddCookie(&http.Cookie{Name: "__Host-wharf_session", Value: session.Value})
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
