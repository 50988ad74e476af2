package proxy

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// A credential the provider refuses on a public path is reported (the
// hub charges it to the caller's address, sixth outside review #6);
// nothing else is: no credential, the provider's other answers, paths
// that are not public (the hub authenticated those itself), or a request
// another replica forwarded (charged there).
func TestBackendRefusals(t *testing.T) {
	tr, _ := startSocket(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("answer") {
		case "401":
			w.WriteHeader(http.StatusUnauthorized)
		case "403":
			w.WriteHeader(http.StatusForbidden)
		case "404":
			w.WriteHeader(http.StatusNotFound)
		default:
			w.WriteHeader(http.StatusOK)
		}
	}))
	var refused atomic.Int32
	b := NewBackend(oneProvider(tr), resolver{}).WithRefusals(func(*http.Request) { refused.Add(1) })
	// The backend reports a refusal after the answer went out (deferred
	// in its ServeHTTP): served tells when it has returned.
	served := make(chan struct{}, 1)
	h := WithAuthorizationPreserved(fakeAuthn(b))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		served <- struct{}{}
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name, path, auth string
		hop              bool
		want             int32
	}{
		{name: "bogus bearer, 401", path: "/services/providers/p/agent/join?answer=401", auth: "Bearer bogus", want: 1},
		{name: "bogus bearer, 403", path: "/services/providers/p/agent/join?answer=403", auth: "Bearer bogus", want: 1},
		{name: "no credential, 401", path: "/services/providers/p/agent/join?answer=401"},
		{name: "good bearer, 200", path: "/services/providers/p/agent/join", auth: "Bearer agent"},
		{name: "bearer, 404", path: "/services/providers/p/agent/join?answer=404", auth: "Bearer bogus"},
		{name: "not public", path: "/services/providers/p/x?answer=401", auth: "Bearer alice-token"},
		{name: "forwarded by a replica", path: "/services/providers/p/agent/join?answer=401", auth: "Bearer bogus", hop: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := refused.Load()
			req, err := http.NewRequest(http.MethodPost, srv.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			if tc.hop {
				req.Header.Set(HopHeader, "replica-b")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			<-served
			if got := refused.Load() - before; got != tc.want {
				t.Errorf("reported %d refusals, want %d (answer %d)", got, tc.want, resp.StatusCode)
			}
		})
	}
}
