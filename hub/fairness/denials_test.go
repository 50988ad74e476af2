package fairness

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/eventclock"
	clocktesting "k8s.io/utils/clock/testing"
)

// A tenant's 403s are answered at once up to the burst, then paced by the
// rate, each waiting at most the hold, on the injected clock; another
// tenant's and an admin's denials are not paced by hers, and answers other
// than 403 never are.
func TestControllerPacesDenials(t *testing.T) {
	fake := clocktesting.NewFakeClock(time.Now().Add(10 * 365 * 24 * time.Hour))
	c, err := NewController(ControllerConfig{
		Keyer: testKeyer(), Limits: Limits{ReadOnly: 40, Mutating: 40, TenantReadOnly: 10, TenantMutating: 10},
		QueueLength: 5, HubQueues: 8, QueueWait: time.Hour, Clock: eventclock.Real{}, WaitClock: fake,
		DenialRate: 1, DenialBurst: 2, DenialHold: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	deny := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("ok") != "" {
			w.WriteHeader(http.StatusOK)
			return
		}
		http.Error(w, "forbidden", http.StatusForbidden)
	})
	limited := chain(t, c, deny)
	type sent struct{ answered chan int }
	send := func(name string, ok bool) sent {
		r := testReq{u: &user.DefaultInfo{Name: name}, verb: "get"}.request()
		r = r.WithContext(apirequest.WithReceivedTimestamp(r.Context(), fake.Now()))
		if ok {
			r.Header.Set("ok", "1")
		}
		s := sent{answered: make(chan int, 1)}
		go func() { w := httptest.NewRecorder(); limited.ServeHTTP(w, r); s.answered <- w.Code }()
		return s
	}
	answered := func(what string, want int, ss ...sent) {
		t.Helper()
		for _, s := range ss {
			if code := <-s.answered; code != want {
				t.Fatalf("%s: %d, want %d", what, code, want)
			}
		}
	}
	unanswered := func(what string, ss ...sent) {
		t.Helper()
		for _, s := range ss {
			select {
			case code := <-s.answered:
				t.Fatalf("%s: answered %d", what, code)
			default:
			}
		}
	}
	waiting := func(n int32) {
		for c.denials.held.Load() < n {
			time.Sleep(time.Millisecond)
		}
	}

	answered("bob's burst", http.StatusForbidden, send("bob", false), send("bob", false))
	third := send("bob", false)
	waiting(1)
	// Over the rate by two seconds: waits the hold, and leaves no debt.
	fourth := send("bob", false)
	waiting(2)
	answered("alice, another tenant", http.StatusForbidden, send("alice", false))
	answered("a hub admin", http.StatusForbidden, send("hubadmin", false))
	answered("bob's allowed request", http.StatusOK, send("bob", true))
	unanswered("bob's paced denials", third, fourth)
	fake.Step(time.Second - time.Millisecond)
	unanswered("a millisecond before the hold", third, fourth)
	fake.Step(time.Millisecond)
	answered("after the hold", http.StatusForbidden, third, fourth)
}
