package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wharfhub/wharf/sdk"
)

const shellBody = "<!doctype html><title>portal shell</title>"

func newUIFront(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/ui/echo.json", echo)
	mux.HandleFunc("/ui/assets/main.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		http.SetCookie(w, &http.Cookie{Name: "leak", Value: "x"})
		_, _ = io.WriteString(w, "console.log('hi')")
	})
	mux.HandleFunc("/ui/tagged.css", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		_, _ = io.WriteString(w, "body{}")
	})
	mux.HandleFunc("/ui/missing.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=86400")
		http.NotFound(w, r)
	})
	tr, _ := startSocket(t, mux)
	shell := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, shellBody)
	})
	srv := httptest.NewServer(NewUI(oneProvider(tr), shell))
	t.Cleanup(srv.Close)
	return srv
}

func TestUIRouting(t *testing.T) {
	srv := newUIFront(t)
	tests := []struct {
		name, path string
		code       int
		shell      bool
		body       string
	}{
		{name: "asset", path: "/ui/providers/p/assets/main.js", code: 200, body: "console.log('hi')"},
		{name: "spa route", path: "/ui/providers/p/some/route", code: 200, shell: true},
		{name: "spa root", path: "/ui/providers/p/", code: 200, shell: true},
		{name: "dotted directory", path: "/ui/providers/p/v1.2/route", code: 200, shell: true},
		{name: "trailing slash", path: "/ui/providers/p/x.js/", code: 200, shell: true},
		{name: "spa route of unknown provider", path: "/ui/providers/nope/route", code: 200, shell: true},
		{name: "asset of unknown provider", path: "/ui/providers/nope/main.js", code: 404},
		{name: "asset of down provider", path: "/ui/providers/down/main.js", code: 503},
		{name: "missing asset", path: "/ui/providers/p/missing.js", code: 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Get(srv.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.code {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.code, b)
			}
			if got := string(b) == shellBody; got != tc.shell {
				t.Errorf("shell served = %v, want %v (%q)", got, tc.shell, b)
			}
			if tc.body != "" && string(b) != tc.body {
				t.Errorf("body %q, want %q", b, tc.body)
			}
			if tc.code >= 400 {
				if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
					t.Errorf("error Cache-Control %q, want no-store", cc)
				}
				if resp.Header.Get("ETag") != "" {
					t.Errorf("error carries ETag %q", resp.Header.Get("ETag"))
				}
			}
		})
	}
}

// TestUIForwardedHeaders checks that assets get no credentials or identity
// and do get the base path.
func TestUIForwardedHeaders(t *testing.T) {
	srv := newUIFront(t)
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/ui/providers/p/echo.json", nil)
	req.Header.Set("Authorization", "Bearer alice-token")
	req.Header.Set("Cookie", WorkspaceCookie+"=root:acme; session=secret")
	req.Header.Set("X-Kedge-User", "mallory")
	req.Header.Set("X-Kedge-Base-Path", "/evil")
	req.Header.Set("Accept-Language", "de")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got seen
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	want := http.Header{sdk.HeaderBasePath: {"/ui/providers/p"}}
	if k := kedgeHeaders(got.Header); len(k) != 1 || k.Get(sdk.HeaderBasePath) != want.Get(sdk.HeaderBasePath) || len(k.Values(sdk.HeaderBasePath)) != 1 {
		t.Errorf("X-Kedge-* = %v, want %v", k, want)
	}
	for _, h := range []string{"Authorization", "Cookie"} {
		if v := got.Header.Values(h); len(v) > 0 {
			t.Errorf("%s forwarded: %q", h, v)
		}
	}
	if got.Header.Get("Accept-Language") != "de" {
		t.Errorf("Accept-Language not forwarded")
	}
	if got.Path != "/ui/echo.json" {
		t.Errorf("socket path %q", got.Path)
	}
}

func TestUICaching(t *testing.T) {
	srv := newUIFront(t)
	get := func(path, inm string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if inm != "" {
			req.Header.Set("If-None-Match", inm)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp
	}

	first := get("/ui/providers/p/assets/main.js", "")
	etag := first.Header.Get("ETag")
	if first.StatusCode != 200 || !strings.HasPrefix(etag, `"`) || strings.HasPrefix(etag, "W/") {
		t.Fatalf("first: %d ETag %q, want a strong ETag", first.StatusCode, etag)
	}
	if again := get("/ui/providers/p/assets/main.js", "").Header.Get("ETag"); again != etag {
		t.Errorf("ETag not stable: %q then %q", etag, again)
	}
	if first.Header.Get("Set-Cookie") != "" {
		t.Errorf("provider cookie passed on a public response")
	}

	tests := []struct {
		name, path, inm string
		code            int
		cacheControl    string
		etag            string
	}{
		{name: "computed etag", path: "/ui/providers/p/assets/main.js", code: 200, cacheControl: assetCacheControl, etag: etag},
		{name: "computed etag matches", path: "/ui/providers/p/assets/main.js", inm: etag, code: 304, cacheControl: assetCacheControl, etag: etag},
		{name: "weak match in list", path: "/ui/providers/p/assets/main.js", inm: `"x", W/` + etag, code: 304, cacheControl: assetCacheControl, etag: etag},
		{name: "stale etag", path: "/ui/providers/p/assets/main.js", inm: `"old"`, code: 200, cacheControl: assetCacheControl, etag: etag},
		{name: "provider etag passes through, long cache shortened", path: "/ui/providers/p/tagged.css", code: 200, cacheControl: assetCacheControl, etag: `"v1"`},
		{name: "provider etag matches", path: "/ui/providers/p/tagged.css", inm: `"v1"`, code: 304, cacheControl: assetCacheControl, etag: `"v1"`},
		{name: "404 never cached long", path: "/ui/providers/p/missing.js", code: 404, cacheControl: "no-store"},
		{name: "503 never cached", path: "/ui/providers/down/missing.js", code: 503, cacheControl: "no-store"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := get(tc.path, tc.inm)
			if resp.StatusCode != tc.code {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.code)
			}
			if cc := resp.Header.Get("Cache-Control"); cc != tc.cacheControl {
				t.Errorf("Cache-Control %q, want %q", cc, tc.cacheControl)
			}
			if e := resp.Header.Get("ETag"); e != tc.etag {
				t.Errorf("ETag %q, want %q", e, tc.etag)
			}
		})
	}
}

func TestUIMethods(t *testing.T) {
	srv := newUIFront(t)
	resp, err := http.Post(srv.URL+"/ui/providers/p/assets/main.js", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST asset: %d Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}
