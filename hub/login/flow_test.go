package login_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wharfhub/wharf/hub/login"
)

func TestBrowserLoginFlow(t *testing.T) {
	e := startEnv(t, envOptions{})
	b := e.browser()
	resp := b.login(t, "/portal/x?y=1")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/portal/x" || resp.Request.URL.RawQuery != "y=1" {
		t.Fatalf("landed at %s with %d %s", resp.Request.URL, resp.StatusCode, body)
	}
	if !strings.Contains(string(body), `"user":"ada@example.com"`) {
		t.Fatalf("landing page not authenticated by the cookie: %s", body)
	}
	cb := b.rec.Last(login.CallbackPath)
	c := sessionCookieOf(t, cb)
	if !c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.MaxAge <= 0 {
		t.Errorf("session cookie attributes: %+v", c)
	}
	// Every cookie the hub sets is bound to its exact origin (issue 11
	// finding 14): __Host- prefix, Secure, Path=/, no Domain.
	for _, r := range b.rec.Responses() {
		if !strings.HasPrefix(r.Request.URL.String(), e.url) {
			continue
		}
		for _, ck := range r.Cookies() {
			if !strings.HasPrefix(ck.Name, "__Host-") || !ck.Secure || ck.Path != "/" || ck.Domain != "" {
				t.Errorf("%s sets cookie %s: not __Host- bound (Secure %v, Path %q, Domain %q)", r.Request.URL.Path, ck.Name, ck.Secure, ck.Path, ck.Domain)
			}
		}
	}
	// The same sealed session under the old, plantable names does not
	// authenticate: a sibling subdomain could have set it.
	for _, name := range []string{"wharf_session", "wharf_login"} {
		req, _ := http.NewRequest(http.MethodGet, e.url+"/clusters/root/api", nil)
		req.AddCookie(&http.Cookie{Name: name, Value: c.Value})
		resp, err := e.browser().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("session under the unprefixed name %s: %d, want 401", name, resp.StatusCode)
		}
	}
	for _, r := range b.rec.Responses() {
		if strings.Contains(r.Request.URL.String(), "code_verifier") || strings.Contains(r.Request.URL.String(), c.Value) {
			t.Errorf("secret in URL %s", r.Request.URL.Redacted())
		}
	}

	// GET with the cookie; state-changing requests need Origin and the
	// CSRF token from /auth/session.
	if code, body := b.do(t, http.MethodGet, "/clusters/root/api", nil); code != http.StatusOK || !strings.Contains(body, `"groups":["dev","ops","system:authenticated"]`) {
		t.Fatalf("GET with cookie: %d %s", code, body)
	}
	code, sbody := b.do(t, http.MethodGet, login.SessionPath, nil)
	var info struct {
		User      string   `json:"user"`
		Groups    []string `json:"groups"`
		CSRFToken string   `json:"csrfToken"`
	}
	if err := json.Unmarshal([]byte(sbody), &info); code != http.StatusOK || err != nil || info.User != "ada@example.com" || info.CSRFToken == "" {
		t.Fatalf("/auth/session: %d %s", code, sbody)
	}
	for name, hdr := range map[string]map[string]string{
		"no CSRF header":  {"Origin": e.url},
		"wrong token":     {"Origin": e.url, login.CSRFHeader: "x" + info.CSRFToken},
		"foreign origin":  {"Origin": "https://evil.example", login.CSRFHeader: info.CSRFToken},
		"no origin":       {login.CSRFHeader: info.CSRFToken},
		"cookie as token": {"Origin": e.url, login.CSRFHeader: c.Value},
	} {
		if code, body := b.do(t, http.MethodPost, "/clusters/root/api/v1/namespaces", hdr); code != http.StatusForbidden {
			t.Errorf("POST %s: %d %s, want 403", name, code, body)
		}
	}
	if code, body := b.do(t, http.MethodPost, "/clusters/root/api/v1/namespaces", map[string]string{"Origin": e.url, login.CSRFHeader: info.CSRFToken}); code != http.StatusOK {
		t.Errorf("POST with Origin and token: %d %s", code, body)
	}

	// Replaying the callback fails: without the pre-login cookie (cleared)
	// and with it put back (the state id was used).
	if code, _ := b.do(t, http.MethodGet, cb.Request.URL.RequestURI(), nil); code != http.StatusBadRequest {
		t.Errorf("replayed callback: %d, want 400", code)
	}
	pre := b.rec.Last(login.LoginPath)
	req, _ := http.NewRequest(http.MethodGet, cb.Request.URL.String(), nil)
	for _, ck := range pre.Cookies() {
		req.AddCookie(ck)
	}
	fresh := e.browser()
	if resp, err := fresh.Do(req); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("replayed callback with its pre-login cookie: %v %v, want 400", resp.StatusCode, err)
	}

	// Logout (CSRF-checked) ends the session: the same cookie, sent by
	// hand, no longer authenticates.
	if code, _ := b.do(t, http.MethodPost, login.LogoutPath, nil); code != http.StatusForbidden {
		t.Errorf("logout without CSRF: %d, want 403", code)
	}
	if code, _ := b.do(t, http.MethodPost, login.LogoutPath, map[string]string{"Origin": e.url, login.CSRFHeader: info.CSRFToken}); code != http.StatusNoContent {
		t.Errorf("logout: %d", code)
	}
	req, _ = http.NewRequest(http.MethodGet, e.url+"/clusters/root/api", nil)
	req.AddCookie(&http.Cookie{Name: login.SessionCookie, Value: c.Value})
	if resp, err := fresh.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("cookie after logout: %v %v, want 401", resp.StatusCode, err)
	}
}

func TestCallbackRefusals(t *testing.T) {
	e := startEnv(t, envOptions{})
	b := e.browser()
	b.stopAtCallback()
	resp := b.login(t, "/")
	resp.Body.Close()
	cb, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || cb.Path != login.CallbackPath {
		t.Fatalf("IdP redirect: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	state := cb.Query().Get("state")
	with := func(state string) string {
		u := *cb
		q := u.Query()
		q.Set("state", state)
		u.RawQuery = q.Encode()
		return u.RequestURI()
	}
	b.CheckRedirect = nil
	for name, s := range map[string]string{
		"tampered state":  state[:len(state)-2] + "AA",
		"state of nobody": "eyJpZCI6Im5vYm9keSIsImV4cCI6OTk5OTk5OTk5OX0.c2ln",
		"no state":        "",
	} {
		if code, body := b.do(t, http.MethodGet, with(s), nil); code != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", name, code, body)
		}
	}
	// Another browser (no pre-login cookie) cannot use this callback URL.
	if code, _ := e.browser().do(t, http.MethodGet, cb.RequestURI(), nil); code != http.StatusBadRequest {
		t.Errorf("callback in another browser: %d, want 400", code)
	}
	// The refusals consumed nothing: the genuine callback still works.
	if code, body := b.do(t, http.MethodGet, cb.RequestURI(), nil); code != http.StatusOK || !strings.Contains(body, "ada@example.com") {
		t.Errorf("genuine callback after refusals: %d %s", code, body)
	}

	for _, then := range []string{"https://evil.example", "//evil.example", "/\\evil.example", "/%2F%2Fevil.example"} {
		resp, err := e.browser().Get(e.url + login.LoginPath + "?then=" + url.QueryEscape(then))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || resp.Request.URL.Host != strings.TrimPrefix(e.url, "https://") {
			t.Errorf("then=%s: %d at %s, want 400 at the hub", then, resp.StatusCode, resp.Request.URL)
		}
	}
}

// TestSessionRefresh: when the ID token behind a session expires, the
// next request refreshes it at the IdP with the server-side refresh token
// and gets a new cookie; without a refresh token the session stops.
func TestSessionRefresh(t *testing.T) {
	const life = 2 * time.Second
	for _, tc := range []struct {
		name    string
		args    []string
		refresh bool
	}{
		{name: "with offline_access", refresh: true},
		{name: "without a refresh token", args: []string{"--oidc-scopes=openid,email,profile,groups"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := startEnv(t, envOptions{idTokenLifetime: life, loginArgs: tc.args})
			b := e.browser()
			resp := b.login(t, "/")
			resp.Body.Close()
			first := sessionCookieOf(t, b.rec.Last(login.CallbackPath))
			// Wait until the ID token (and so the session's identity) is
			// due for revalidation; the wait is bounded, nothing is timed.
			if err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, false, func(context.Context) (bool, error) {
				r := httptest.NewRequest(http.MethodGet, "/", nil)
				r.AddCookie(first)
				_, ok, _ := e.auth.AuthenticateRequest(r)
				return !ok, nil
			}); err != nil {
				t.Fatal("session never became due for revalidation")
			}
			code, body := b.do(t, http.MethodGet, "/clusters/root/api", nil)
			if !tc.refresh {
				if code != http.StatusUnauthorized {
					t.Fatalf("expired session without refresh token: %d %s", code, body)
				}
				return
			}
			if code != http.StatusOK || !strings.Contains(body, "ada@example.com") {
				t.Fatalf("request after ID token expiry: %d %s", code, body)
			}
			renewed := sessionCookieOf(t, b.rec.Last("/clusters/root/api"))
			if renewed.Value == first.Value || !renewed.HttpOnly || !renewed.Secure {
				t.Fatalf("renewed cookie: %+v", renewed)
			}
			// A second copy of the stale cookie (another tab) adopts the
			// refreshed session instead of spending the rotated token.
			req, _ := http.NewRequest(http.MethodGet, e.url+"/clusters/root/api", nil)
			req.AddCookie(first)
			r2, err := e.browser().Do(req)
			if err != nil || r2.StatusCode != http.StatusOK {
				t.Fatalf("stale cookie after refresh: %v %v", r2.StatusCode, err)
			}
			if c := sessionCookieOf(t, r2); c.Value != renewed.Value {
				t.Errorf("stale cookie got a different session than the refreshed one")
			}
		})
	}
}
