package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apiserver/pkg/authentication/authenticator"
)

// TestWithProviderRoutes runs the backend behind the real upstream
// authentication filter, which deletes Authorization on success.
func TestWithProviderRoutes(t *testing.T) {
	tr, _ := startSocket(t, http.HandlerFunc(echo))
	auth := authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
		u, ok := users[r.Header.Get("Authorization")]
		if !ok {
			return nil, false, nil
		}
		return &authenticator.Response{User: u}, true, nil
	})
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "api") })
	shell := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "shell") })
	h := WithProviderRoutes(api, NewBackend(oneProvider(tr), resolver{}), NewUI(oneProvider(tr), shell), auth, nil)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	tests := []struct {
		name, path, auth string
		code             int
		user, authz      string // as seen by the provider; "" = absent
		body             string // for non-provider answers
	}{
		{name: "api passes on", path: "/api", code: 200, body: "api"},
		{name: "ui asset unauthenticated", path: "/ui/providers/p/echo.json", code: 200},
		{name: "ui spa route", path: "/ui/providers/p/route", code: 200, body: "shell"},
		{name: "backend authenticated", path: "/services/providers/p/x", auth: "Bearer alice-token", code: 200, user: "alice", authz: "Bearer alice-token"},
		{name: "backend unauthenticated", path: "/services/providers/p/x", code: 401},
		{name: "backend bad token", path: "/services/providers/p/x", auth: "Bearer wrong", code: 401},
		{name: "public path unauthenticated", path: "/services/providers/p/agent/x", code: 200},
		{name: "public path keeps token but asserts nothing", path: "/services/providers/p/agent/x", auth: "Bearer alice-token", code: 200, authz: "Bearer alice-token"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+tc.path, nil)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			req.Header.Set("X-Kedge-User", "mallory")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.code {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.code, b)
			}
			if tc.body != "" || tc.code != 200 {
				if tc.body != "" && string(b) != tc.body {
					t.Errorf("body %q, want %q", b, tc.body)
				}
				return
			}
			var got seen
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if v := got.Header.Values("X-Kedge-User"); (tc.user == "" && len(v) != 0) || (tc.user != "" && (len(v) != 1 || v[0] != tc.user)) {
				t.Errorf("X-Kedge-User %q, want %q", v, tc.user)
			}
			if a := got.Header.Get("Authorization"); a != tc.authz {
				t.Errorf("Authorization %q, want %q", a, tc.authz)
			}
		})
	}
}
