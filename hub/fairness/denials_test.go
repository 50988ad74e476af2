package fairness

import (
	"net/http"
	"testing"
	"time"

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
	send := func(name string, ok bool) sent {
		var h http.Header
		if ok {
			h = http.Header{"Ok": {"1"}}
		}
		return sendAt(limited, name, "get", fake.Now(), h)
	}
	waiting := func(n int32) {
		for c.denials.held.Load() < n {
			time.Sleep(time.Millisecond)
		}
	}

	answeredWith(t, "bob's burst", http.StatusForbidden, send("bob", false), send("bob", false))
	third := send("bob", false)
	waiting(1)
	// Over the rate by two seconds: waits the hold, and leaves no debt.
	fourth := send("bob", false)
	waiting(2)
	answeredWith(t, "alice, another tenant", http.StatusForbidden, send("alice", false))
	answeredWith(t, "a hub admin", http.StatusForbidden, send("hubadmin", false))
	answeredWith(t, "bob's allowed request", http.StatusOK, send("bob", true))
	unanswered(t, "bob's paced denials", third, fourth)
	fake.Step(time.Second - time.Millisecond)
	unanswered(t, "a millisecond before the hold", third, fourth)
	fake.Step(time.Millisecond)
	answeredWith(t, "after the hold", http.StatusForbidden, third, fourth)
}
