package hub

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"regexp"
	"strings"
	"testing"
)

// TestPortalShellSession drives the real hub the way the portal shell does,
// at the HTTP level (the browser tests live in test/e2e/portal): the shell
// is served at / and /ui/ with its CSP, a static token becomes a session
// cookie through /auth/token-session, the CSRF token reaches the shell's
// own document only, and with it (and only with it) the cookie can write.
func TestPortalShellSession(t *testing.T) {
	h := startHub(t, hubOptions{})
	jar, _ := cookiejar.New(nil)
	c := h.client()
	c.Jar = jar
	do := func(method, path, body string, hdr map[string]string) (int, string, http.Header) {
		t.Helper()
		req, _ := http.NewRequest(method, h.URL+path, strings.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	nav := map[string]string{"Accept": "text/html", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
	script := map[string]string{"Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty", "Sec-Fetch-Site": "same-origin"}
	meta := regexp.MustCompile(`<meta name="wharf-csrf" content="([^"]*)">`)

	// Signed out: the shell, with an empty token, and a strict CSP.
	code, body, hdr := do("GET", "/", "", nav)
	if code != 200 || !strings.Contains(body, `src="/ui/shell/app.js"`) {
		t.Fatalf("GET / as a browser: %d %.200s", code, body)
	}
	if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("CSP %q", csp)
	}
	if m := meta.FindStringSubmatch(body); m == nil || m[1] != "" {
		t.Fatalf("signed-out shell's token meta: %v", m)
	}
	// kubectl and curl still get the API's root at /.
	if code, body := h.doAs(h.Token, "GET", "/", ""); code != 200 || !strings.Contains(body, `"paths"`) {
		t.Errorf("GET / as an API client: %d %.200s", code, body)
	}
	if code, body, _ := do("GET", "/ui/shell/provider.js", "", nil); code != 200 || !strings.Contains(body, "defineProvider") {
		t.Errorf("provider helper: %d", code)
	}

	// Token sign-in: refused cross-site, then a cookie for the same origin.
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": "https://evil.example"}
	if code, _, _ := do("POST", "/auth/token-session", "token="+h.Token, form); code != http.StatusForbidden {
		t.Fatalf("cross-site token sign-in: %d", code)
	}
	form["Origin"] = h.URL
	if code, body, _ := do("POST", "/auth/token-session", "token=wrong", form); code != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d %s", code, body)
	}
	if code, body, _ := do("POST", "/auth/token-session", "token="+h.Token, form); code != http.StatusNoContent {
		t.Fatalf("token sign-in: %d %s", code, body)
	}

	// A page script asking /auth/session gets the user but no token; the
	// shell's own navigation gets it in the page.
	code, body, _ = do("GET", "/auth/session", "", script)
	var s map[string]any
	if err := json.Unmarshal([]byte(body), &s); code != 200 || err != nil || s["user"] == nil || s["csrfToken"] != nil {
		t.Fatalf("session for a page script: %d %s", code, body)
	}
	for _, path := range []string{"/ui/catalog?ws=root", "/ui/providers/example/some/route"} {
		code, body, hdr = do("GET", path, "", nav)
		m := meta.FindStringSubmatch(body)
		if code != 200 || m == nil || m[1] == "" || hdr.Get("Cache-Control") != "no-store" {
			t.Fatalf("signed-in navigation to %s: %d, meta %v, Cache-Control %q", path, code, m, hdr.Get("Cache-Control"))
		}
	}
	token := meta.FindStringSubmatch(body)[1]
	if _, body, _ := do("GET", "/ui/", "", script); strings.Contains(body, token) {
		t.Fatal("a script's fetch of the shell page got the CSRF token")
	}

	// Writing with the cookie needs that token: a provider script's own
	// fetch (no token) is refused, the shell's succeeds.
	ws := `{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":"from-portal"}}`
	write := map[string]string{"Content-Type": "application/json", "Origin": h.URL}
	if code, body, _ := do("POST", "/clusters/root/apis/tenancy.wharf.dev/v1alpha1/workspaces", ws, write); code != http.StatusForbidden || !strings.Contains(body, "X-Wharf-CSRF") {
		t.Fatalf("cookie write without the token: %d %s", code, body)
	}
	write["X-Wharf-CSRF"] = token
	if code, body, _ := do("POST", "/clusters/root/apis/tenancy.wharf.dev/v1alpha1/workspaces", ws, write); code != http.StatusCreated {
		t.Fatalf("cookie write with the token: %d %s", code, body)
	}

	// Sign out ends it.
	if code, _, _ := do("POST", "/auth/logout", "", map[string]string{"Origin": h.URL, "X-Wharf-CSRF": token}); code != http.StatusNoContent {
		t.Fatalf("logout: %d", code)
	}
	if code, _, _ := do("GET", "/api/whoami", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("whoami after logout: %d", code)
	}
}
