package fairness

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/wharfhub/wharf/hub/apis/scheme"
)

// TestWithProviderLimit: on the provider routes the method decides the
// budget, and every request counts, streams included.
func TestWithProviderLimit(t *testing.T) {
	bob := &user.DefaultInfo{Name: "bob"}
	for _, tt := range []struct {
		name    string
		held    []string // methods held in flight by bob first
		method  string
		u       user.Info
		wantOK  bool
		upgrade bool
	}{
		{"mutating share used up", []string{http.MethodPost}, http.MethodPut, bob, false, false},
		{"read-only is separate", []string{http.MethodPost}, http.MethodGet, bob, true, false},
		{"HEAD and OPTIONS are read-only", []string{http.MethodHead}, http.MethodOptions, bob, false, false},
		{"an upgrade counts too", []string{http.MethodGet}, http.MethodGet, bob, false, true},
		{"another person", []string{http.MethodPost}, http.MethodPost, &user.DefaultInfo{Name: "alice"}, true, false},
		{"a hub admin", []string{http.MethodPost}, http.MethodPost, &user.DefaultInfo{Name: "hubadmin"}, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := held{entered: make(chan struct{}), release: make(chan struct{})}
			f := Filter{Limiter: NewLimiter(Limits{ReadOnly: 10, Mutating: 10, TenantReadOnly: 1, TenantMutating: 1}),
				Keyer: Keyer{IsAdmin: func(u user.Info) bool { return u.GetName() == "hubadmin" }}}
			limited := f.WithProviderLimit(h, scheme.NewCodecs(scheme.New()))
			send := func(method string, u user.Info, upgrade bool) (*httptest.ResponseRecorder, chan struct{}) {
				r := httptest.NewRequest(method, "/services/providers/example/x", nil)
				if upgrade {
					r.Header.Set("Connection", "Upgrade")
					r.Header.Set("Upgrade", "websocket")
				}
				w := httptest.NewRecorder()
				done := make(chan struct{})
				go func() { limited.ServeHTTP(w, r.WithContext(apirequest.WithUser(r.Context(), u))); close(done) }()
				return w, done
			}
			var dones []chan struct{}
			for _, m := range tt.held {
				_, done := send(m, bob, false)
				<-h.entered
				dones = append(dones, done)
			}
			w, done := send(tt.method, tt.u, tt.upgrade)
			select {
			case <-h.entered:
				if !tt.wantOK {
					t.Fatal("let in over the share")
				}
				dones = append(dones, done)
			case <-done:
				if tt.wantOK {
					t.Fatalf("refused: %d %s", w.Code, w.Body)
				}
				checkTooMany(t, w)
			}
			close(h.release)
			for _, d := range dones {
				<-d
			}
		})
	}
}
