package portal_test

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/wharfhub/wharf/portal"
)

func newPortal(t *testing.T) http.Handler {
	t.Helper()
	p, err := portal.New(portal.Options{CSRF: func(r *http.Request) string {
		if r.Header.Get("Sec-Fetch-Mode") == "navigate" {
			return "tok-123"
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("api")) })
	return p.WithPortal(api, "/ui/providers/")
}

func TestRoutes(t *testing.T) {
	h := newPortal(t)
	tests := []struct {
		name, method, path string
		hdr                map[string]string
		wantCode           int
		wantBody           string
		wantType           string
		wantCache          string
	}{
		{"browser at /", "GET", "/", map[string]string{"Accept": "text/html,application/xhtml+xml"}, 200, "<title>Wharf</title>", "text/html", "no-cache"},
		{"kubectl at /", "GET", "/", map[string]string{"Accept": "application/json"}, 200, "api", "", ""},
		{"POST /", "POST", "/", map[string]string{"Accept": "text/html"}, 200, "api", "", ""},
		{"overview", "GET", "/ui/", nil, 200, `src="/ui/shell/app.js"`, "text/html", "no-cache"},
		{"catalog deep link", "GET", "/ui/catalog?ws=root:a", nil, 200, "<title>Wharf</title>", "text/html", "no-cache"},
		{"bare /ui", "GET", "/ui", nil, 200, "<title>Wharf</title>", "text/html", "no-cache"},
		{"provider routes are the UI proxy's", "GET", "/ui/providers/hello/x", nil, 200, "api", "", ""},
		{"module", "GET", "/ui/shell/app.js", nil, 200, "import", "text/javascript", "no-cache"},
		{"helper", "GET", "/ui/shell/provider.js", nil, 200, "export function defineProvider", "text/javascript", "no-cache"},
		{"css", "GET", "/ui/shell/style.css", nil, 200, "prefers-color-scheme", "text/css", "no-cache"},
		{"missing file", "GET", "/ui/shell/nope.js", nil, 404, `"kind":"Status"`, "application/json", "no-store"},
		{"no traversal", "GET", "/ui/shell/../portal.go", nil, 404, "NotFound", "application/json", "no-store"},
		{"asset POST", "POST", "/ui/shell/app.js", nil, 405, "MethodNotAllowed", "application/json", ""},
		{"navigation gets the token, never cached", "GET", "/ui/", map[string]string{"Sec-Fetch-Mode": "navigate"}, 200, `content="tok-123"`, "text/html", "no-store"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, tt.path, nil)
			for k, v := range tt.hdr {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.wantCode || !strings.Contains(w.Body.String(), tt.wantBody) {
				t.Fatalf("%d %.200q, want %d with %q", w.Code, w.Body.String(), tt.wantCode, tt.wantBody)
			}
			if got := w.Header().Get("Content-Type"); !strings.HasPrefix(got, tt.wantType) {
				t.Errorf("Content-Type %q, want %q", got, tt.wantType)
			}
			if got := w.Header().Get("Cache-Control"); got != tt.wantCache {
				t.Errorf("Cache-Control %q, want %q", got, tt.wantCache)
			}
			if tt.wantType != "" && w.Header().Get("Content-Security-Policy") != portal.CSP {
				t.Errorf("CSP %q", w.Header().Get("Content-Security-Policy"))
			}
		})
	}
}

func TestShellRevalidates(t *testing.T) {
	h := newPortal(t)
	first := httptest.NewRecorder()
	h.ServeHTTP(first, httptest.NewRequest("GET", "/ui/", nil))
	etag := first.Header().Get("ETag")
	if etag == "" || strings.Contains(first.Body.String(), "tok-123") {
		t.Fatalf("etag %q; a page without navigation carried a token", etag)
	}
	r := httptest.NewRequest("GET", "/ui/catalog", nil)
	r.Header.Set("If-None-Match", etag)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusNotModified {
		t.Fatalf("revalidation: %d", w.Code)
	}
}

// TestCSP: the policy forbids inline script and framing, and the shell
// has no inline script or handler for it to block.
func TestCSP(t *testing.T) {
	for _, want := range []string{"script-src 'self'", "frame-ancestors 'none'", "object-src 'none'", "base-uri 'none'"} {
		if !strings.Contains(portal.CSP, want) {
			t.Errorf("CSP lacks %q", want)
		}
	}
	if strings.Contains(portal.CSP, "unsafe-inline") || strings.Contains(portal.CSP, "unsafe-eval") {
		t.Errorf("CSP allows inline code: %s", portal.CSP)
	}
	shell := os.DirFS("shell")
	page, err := fs.ReadFile(shell, "index.html")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`<script(?:[^>]*)>[^<]+</script>|\son[a-z]+=|<style`).Find(page); m != nil {
		t.Errorf("index.html has inline code the CSP would block: %q", m)
	}
	// No module writes markup from strings or stores anything secret.
	js, _ := fs.Glob(shell, "*.js")
	for _, f := range js {
		b, _ := fs.ReadFile(shell, f)
		for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "localStorage", "eval("} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s uses %s", f, bad)
			}
		}
	}
}
