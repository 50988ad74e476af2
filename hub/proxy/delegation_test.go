package proxy

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/wharfhub/wharf/sdk"
)

// TestDelegationHeader: a provider gets sdk.HeaderDelegation only on an
// aggregated request, and only the hub's own (WithDelegation); a value a
// client sends goes nowhere.
func TestDelegationHeader(t *testing.T) {
	tr, _ := startSocket(t, http.HandlerFunc(echo))
	b := NewBackend(oneProvider(tr), resolver{})
	id := sdk.Identity{User: "alice", Groups: []string{"dev"}, Tenant: "root:acme", Cluster: "c0acme"}
	got := func(w *httptest.ResponseRecorder) string {
		t.Helper()
		var s seen
		if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
		return s.Header.Get(sdk.HeaderDelegation)
	}
	for _, tt := range []struct {
		name, sent, hub, want string
	}{
		{"the hub's", "", "tok-1", "tok-1"},
		{"the hub's, not the client's", "forged", "tok-1", "tok-1"},
		{"the client's alone", "forged", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/apis/g.example.com/v1/things", nil)
			if tt.sent != "" {
				r.Header.Set(sdk.HeaderDelegation, tt.sent)
			}
			r = r.WithContext(WithDelegation(r.Context(), tt.hub))
			w := httptest.NewRecorder()
			b.ServeAggregated(w, r, "p", id, "/clusters/root:acme/apis/g.example.com/v1/things")
			if g := got(w); g != tt.want {
				t.Errorf("the provider got %q, want %q", g, tt.want)
			}
		})
	}
	t.Run("the backend route", func(t *testing.T) {
		srv := newBackendFront(t, oneProvider(tr), resolver{})
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/services/providers/p/x", nil)
		req.Header.Set("Authorization", "Bearer alice-token")
		req.Header.Set(sdk.HeaderDelegation, "forged")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var s seen
		if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
			t.Fatal(err)
		}
		if g := s.Header.Get(sdk.HeaderDelegation); g != "" {
			t.Errorf("the provider got %q from a client", g)
		}
	})
}
