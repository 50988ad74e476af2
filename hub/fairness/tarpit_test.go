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

// A request refused at once is answered RefusalHold after its arrival, on
// the injected clock; past its tenant's bound of held refusals, and once
// it has waited that long, at once. As in TestControllerQueueWaitFromArrival
// the fake clock is far ahead of the real one, so only the Controller's
// clock decides.
func TestControllerHoldsRefusals(t *testing.T) {
	fake := clocktesting.NewFakeClock(time.Now().Add(10 * 365 * 24 * time.Hour))
	c, err := NewController(ControllerConfig{
		Keyer: testKeyer(), Limits: Limits{ReadOnly: 4, Mutating: 4, TenantReadOnly: 1, TenantMutating: 1},
		QueueLength: 0, HubQueues: 8, QueueWait: time.Hour, Clock: eventclock.Real{}, WaitClock: fake,
		RefusalHold: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	g := gate{entered: make(chan string), release: map[string]chan struct{}{"bob": make(chan struct{})}}
	limited := chain(t, c, g)
	type sent struct {
		w        *httptest.ResponseRecorder
		answered chan int
	}
	send := func(arrived time.Time) sent {
		r := testReq{u: &user.DefaultInfo{Name: "bob"}, verb: "create"}.request()
		r = r.WithContext(apirequest.WithReceivedTimestamp(r.Context(), arrived))
		s := sent{w: httptest.NewRecorder(), answered: make(chan int, 1)}
		go func() { limited.ServeHTTP(s.w, r); s.answered <- s.w.Code }()
		return s
	}
	unanswered := func(what string, ss ...sent) {
		t.Helper()
		for _, s := range ss {
			select {
			case code := <-s.answered:
				t.Fatalf("%s: answered %d: %s", what, code, s.w.Body)
			default:
			}
		}
	}
	refused := func(what string, s sent) {
		t.Helper()
		if code := <-s.answered; code != http.StatusTooManyRequests {
			t.Fatalf("%s: answered %d, want 429: %s", what, code, s.w.Body)
		}
		checkTooMany(t, s.w)
	}

	// bob's one mutating seat.
	running := send(fake.Now())
	if got := <-g.entered; got != "bob" {
		t.Fatalf("%s let in", got)
	}
	// His share (1 + 1) and queues (0) bound his held refusals to 2.
	held := []sent{send(fake.Now()), send(fake.Now())}
	for c.tarpit.holding() != 2 {
		time.Sleep(time.Millisecond)
	}
	refused("a third refusal, past the bound", send(fake.Now()))
	refused("a request that arrived a second ago", send(fake.Now().Add(-time.Second)))
	unanswered("held refusals", held...)
	fake.Step(time.Second - time.Millisecond)
	unanswered("held refusals a millisecond before their second", held...)
	fake.Step(time.Millisecond)
	for _, s := range held {
		refused("held refusal after its second", s)
	}
	if n := c.tarpit.holding(); n != 0 {
		t.Fatalf("%d refusals still held", n)
	}
	close(g.release["bob"])
	if code := <-running.answered; code != http.StatusCreated {
		t.Fatalf("bob's running request: %d", code)
	}
}
