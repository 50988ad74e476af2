package fairness

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
)

// A request its client cancelled already (an HTTP/2 stream reset, whose
// handler the timeout filter left running: fifth review, #20) is not
// run and takes no lock; upstream's filter still finds it classified and
// answers 429, to nobody.
func TestCancelledNotRun(t *testing.T) {
	c := newTestController(t, 0, nil)
	for _, u := range []user.Info{&user.DefaultInfo{Name: "bob"}, &user.DefaultInfo{Name: "hubadmin"}} {
		ran := false
		h := chain(t, c, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true }))
		r := testReq{u: u, verb: "get"}.request()
		ctx, cancel := context.WithCancel(r.Context())
		cancel()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r.WithContext(ctx))
		if ran {
			t.Errorf("%s: a cancelled request ran", u.GetName())
		}
		if w.Code != http.StatusTooManyRequests {
			t.Errorf("%s: answered %d, want 429", u.GetName(), w.Code)
		}
	}
}
