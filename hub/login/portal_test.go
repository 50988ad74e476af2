package login_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/token/tokenfile"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/wharfhub/wharf/hub/login"
)

// tokenEnv is the login handler with token login on (no OIDC) in front of
// an API that answers with the session identity and, on /doc, with what
// DocumentCSRF gives the request.
func tokenEnv(t *testing.T) (*httptest.Server, *http.Client) {
	t.Helper()
	var h http.Handler
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	l, err := login.New(login.Config{
		Options: login.NewOptions(), ExternalURL: srv.URL, Etcd: login.TestEtcd(t), EtcdPrefix: "/registry",
		StateKey: login.TestKey(t), SessionKey: login.TestKey(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/doc" {
			_, _ = io.WriteString(w, l.DocumentCSRF(r))
			return
		}
		resp, ok, _ := l.Sessions().AuthenticateRequest(r)
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, resp.User.GetName())
	})
	static := tokenfile.New(map[string]*user.DefaultInfo{"ada-token": {Name: "ada", Groups: []string{"dev"}}})
	h = l.Handler(api, login.Deps{StaticTokens: static})
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: poolOf(srv)}}}
	return srv, c
}

func poolOf(srv *httptest.Server) *x509.CertPool {
	return srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
}

func TestTokenSession(t *testing.T) {
	srv, c := tokenEnv(t)
	do := func(method, path, ctype, body string, hdr map[string]string) (int, string, *http.Response) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp
	}
	same := map[string]string{"Origin": srv.URL}
	form := "application/x-www-form-urlencoded"
	refusals := []struct {
		name, method, ctype, body string
		hdr                       map[string]string
		want                      int
	}{
		{"GET", http.MethodGet, "", "", same, http.StatusMethodNotAllowed},
		{"cross-site", http.MethodPost, form, "token=ada-token", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"no origin", http.MethodPost, form, "token=ada-token", nil, http.StatusForbidden},
		{"wrong token", http.MethodPost, form, "token=nope", same, http.StatusUnauthorized},
		{"empty token", http.MethodPost, form, "token=", same, http.StatusBadRequest},
		{"text body", http.MethodPost, "text/plain", "ada-token", same, http.StatusBadRequest},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			if code, body, resp := do(tt.method, login.TokenSessionPath, tt.ctype, tt.body, tt.hdr); code != tt.want {
				t.Fatalf("code %d, want %d: %s", code, tt.want, body)
			} else if len(resp.Cookies()) != 0 {
				t.Fatalf("refused sign-in set cookies %v", resp.Cookies())
			}
		})
	}
	if code, _, _ := do(http.MethodGet, "/whoami", "", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("before sign-in: %d", code)
	}
	code, body, resp := do(http.MethodPost, login.TokenSessionPath, "application/json", `{"token":"ada-token"}`, same)
	if code != http.StatusNoContent {
		t.Fatalf("sign-in: %d %s", code, body)
	}
	var sc *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == login.SessionCookie {
			sc = ck
		}
	}
	if sc == nil || !sc.HttpOnly || !sc.Secure || strings.Contains(sc.Value, "ada-token") {
		t.Fatalf("session cookie %+v", sc)
	}
	if code, body, _ := do(http.MethodGet, "/whoami", "", "", nil); code != http.StatusOK || body != "ada" {
		t.Fatalf("after sign-in: %d %q", code, body)
	}

	// The CSRF token: to a non-browser client and to a document
	// navigation, never to a page script's fetch.
	csrfOf := func(hdr map[string]string) string {
		t.Helper()
		code, body, _ := do(http.MethodGet, login.SessionPath, "", "", hdr)
		if code != http.StatusOK {
			t.Fatalf("session: %d %s", code, body)
		}
		var s struct {
			User      string `json:"user"`
			CSRFToken string `json:"csrfToken"`
		}
		if err := json.Unmarshal([]byte(body), &s); err != nil || s.User != "ada" {
			t.Fatalf("session %q: %v", body, err)
		}
		return s.CSRFToken
	}
	token := csrfOf(nil)
	if token == "" {
		t.Fatal("no CSRF token for a non-browser client")
	}
	for _, mode := range []string{"cors", "same-origin", "no-cors"} {
		if got := csrfOf(map[string]string{"Sec-Fetch-Mode": mode, "Sec-Fetch-Dest": "empty", "Sec-Fetch-Site": "same-origin"}); got != "" {
			t.Errorf("a page script's fetch (mode %s) got the CSRF token", mode)
		}
	}
	docs := []struct {
		name string
		hdr  map[string]string
		want string
	}{
		{"navigation", map[string]string{"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}, token},
		{"iframe", map[string]string{"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe"}, ""},
		{"fetch", map[string]string{"Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}, ""},
		{"no fetch metadata", nil, ""},
	}
	for _, tt := range docs {
		if _, got, _ := do(http.MethodGet, "/doc", "", "", tt.hdr); got != tt.want {
			t.Errorf("%s: DocumentCSRF %q, want %q", tt.name, got, tt.want)
		}
	}
	// The session is an ordinary one: logout needs the CSRF token and
	// ends it.
	if code, _, _ := do(http.MethodPost, login.LogoutPath, "", "", same); code != http.StatusForbidden {
		t.Fatalf("logout without CSRF token: %d", code)
	}
	if code, _, _ := do(http.MethodPost, login.LogoutPath, "", "", map[string]string{"Origin": srv.URL, login.CSRFHeader: token}); code != http.StatusNoContent {
		t.Fatalf("logout: %d", code)
	}
	u, _ := url.Parse(srv.URL)
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == login.SessionCookie {
			t.Fatal("session cookie kept after logout")
		}
	}
}
