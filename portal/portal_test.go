package portal_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wharfhub/wharf/portal"
)

func TestShell(t *testing.T) {
	h := portal.Shell()
	tests := []struct {
		name        string
		method      string
		ifNoneMatch bool
		wantCode    int
	}{
		{"get", http.MethodGet, false, http.StatusOK},
		{"head", http.MethodHead, false, http.StatusOK},
		{"revalidate", http.MethodGet, true, http.StatusNotModified},
		{"post", http.MethodPost, false, http.StatusMethodNotAllowed},
	}
	first := httptest.NewRecorder()
	h.ServeHTTP(first, httptest.NewRequest(http.MethodGet, "/ui/providers/hello/some/route", nil))
	etag := first.Header().Get("ETag")
	if etag == "" || !strings.Contains(first.Body.String(), "/ui/providers/") {
		t.Fatalf("first response: etag %q, body %q", etag, first.Body.String())
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, "/ui/providers/hello/some/route", nil)
			if tt.ifNoneMatch {
				r.Header.Set("If-None-Match", etag)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.wantCode {
				t.Fatalf("code %d, want %d", w.Code, tt.wantCode)
			}
			if tt.wantCode == http.StatusOK {
				if got := w.Header().Get("Cache-Control"); got != "no-cache" {
					t.Errorf("Cache-Control %q", got)
				}
				if got := w.Header().Get("Content-Type"); !strings.HasPrefix(got, "text/html") {
					t.Errorf("Content-Type %q", got)
				}
			}
		})
	}
}
