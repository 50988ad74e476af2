package fairness

import (
	"net/http"
	"testing"
	"time"

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
	send := func(arrived time.Time) sent { return sendAt(limited, "bob", "create", arrived, nil) }

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
	past := send(fake.Now())
	refusedWith429(t, "a third refusal, past the bound", past)
	// Not held, it closes its connection: a client resending at once
	// must reconnect (fourth outside review, attempt 1).
	if got := past.w.Header().Get("Connection"); got != "close" {
		t.Fatalf("a refusal past the bound: Connection %q, want close", got)
	}
	late := send(fake.Now().Add(-time.Second))
	refusedWith429(t, "a request that arrived a second ago", late)
	if got := late.w.Header().Get("Connection"); got != "" {
		t.Fatalf("a refusal that waited its second: Connection %q, want none", got)
	}
	unanswered(t, "held refusals", held...)
	fake.Step(time.Second - time.Millisecond)
	unanswered(t, "held refusals a millisecond before their second", held...)
	fake.Step(time.Millisecond)
	for _, s := range held {
		refusedWith429(t, "held refusal after its second", s)
		if got := s.w.Header().Get("Connection"); got != "" {
			t.Fatalf("a held refusal: Connection %q, want none", got)
		}
	}
	if n := c.tarpit.holding(); n != 0 {
		t.Fatalf("%d refusals still held", n)
	}
	close(g.release["bob"])
	if code := <-running.answered; code != http.StatusCreated {
		t.Fatalf("bob's running request: %d", code)
	}
}
