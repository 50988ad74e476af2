package fairness

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// sent is a request served in the background through a chain: the tests
// that step a fake clock check what has been answered, and when.
type sent struct {
	w        *httptest.ResponseRecorder
	answered chan int
}

// sendAt serves a verb request by name, received at arrived, through h in
// the background; header, if any, is added to it.
func sendAt(h http.Handler, name, verb string, arrived time.Time, header http.Header) sent {
	r := testReq{u: &user.DefaultInfo{Name: name}, verb: verb}.request()
	r = r.WithContext(apirequest.WithReceivedTimestamp(r.Context(), arrived))
	for k, v := range header {
		r.Header[k] = v
	}
	s := sent{w: httptest.NewRecorder(), answered: make(chan int, 1)}
	go func() { h.ServeHTTP(s.w, r); s.answered <- s.w.Code }()
	return s
}

// unanswered fails if any of ss has been answered yet.
func unanswered(t *testing.T, what string, ss ...sent) {
	t.Helper()
	for _, s := range ss {
		select {
		case code := <-s.answered:
			t.Fatalf("%s: answered %d: %s", what, code, s.w.Body)
		default:
		}
	}
}

// answeredWith waits for each of ss and fails unless it got want.
func answeredWith(t *testing.T, what string, want int, ss ...sent) {
	t.Helper()
	for _, s := range ss {
		if code := <-s.answered; code != want {
			t.Fatalf("%s: answered %d, want %d: %s", what, code, want, s.w.Body)
		}
	}
}

// refusedWith429 waits for s and fails unless it is the hub's 429.
func refusedWith429(t *testing.T, what string, s sent) {
	t.Helper()
	answeredWith(t, what, http.StatusTooManyRequests, s)
	checkTooMany(t, s.w)
}
