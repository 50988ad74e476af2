package fairness

import (
	"context"
	"net/http"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/eventclock"
	clocktesting "k8s.io/utils/clock/testing"
)

// gate holds each request until its user's release channel lets it go.
type gate struct {
	entered chan string
	release map[string]chan struct{}
}

func (g gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u, _ := apirequest.UserFrom(r.Context())
	g.entered <- u.GetName()
	<-g.release[u.GetName()]
	w.WriteHeader(http.StatusCreated)
}

// waitHub waits until the hub-wide mutating queue set has n requests
// waiting. Untimed: it polls the queue set's state, not the clock.
func waitHub(c *Controller, n int) {
	for c.hub[Mutating].Dump(false).Waiting != n {
		time.Sleep(time.Millisecond)
	}
}

// TestControllerQueueWaitFromArrival (outside attack review, row 36): a
// request waits at most QueueWait in all, counted from its arrival, across
// both queue levels, then gets 429 with Retry-After. The wait runs on an
// injected clock: nothing here depends on how fast the machine is.
//
// The fake clock starts ten years ahead of the real one, so that
// upstream's own bound (its filter ends the wait at the received timestamp
// plus at most a minute, on the real clock) can never fire during the
// test: only the Controller's bound, on the fake clock, can refuse.
func TestControllerQueueWaitFromArrival(t *testing.T) {
	const wait = time.Hour
	epoch := time.Now().Add(10 * 365 * 24 * time.Hour)
	fake := clocktesting.NewFakeClock(epoch)
	c, err := NewController(ControllerConfig{
		Keyer: testKeyer(), Limits: Limits{ReadOnly: 4, Mutating: 4, TenantReadOnly: 2, TenantMutating: 2},
		QueueLength: 5, HubQueues: 8, QueueWait: wait, Clock: eventclock.Real{}, WaitClock: fake,
	})
	if err != nil {
		t.Fatal(err)
	}
	g := gate{entered: make(chan string), release: map[string]chan struct{}{
		"bob": make(chan struct{}), "alice": make(chan struct{}), "carol": make(chan struct{}),
	}}
	limited := chain(t, c, g)
	send := func(name string, arrived time.Time) sent {
		return sendAt(limited, name, "create", arrived, nil)
	}
	hold := func(name string) sent {
		s := send(name, fake.Now())
		if got := <-g.entered; got != name {
			t.Fatalf("%s's request let in, want %s's", got, name)
		}
		return s
	}
	bobTenant, _ := testKeyer().Tenant(context.Background(), &user.DefaultInfo{Name: "bob"})
	stillWaiting := func(s sent, what string) {
		t.Helper()
		unanswered(t, what+" (before its wait was up)", s)
	}
	refused := func(s sent, what string) {
		t.Helper()
		refusedWith429(t, what, s)
	}

	// bob uses his share: two seats.
	var heldReqs []sent
	heldReqs = append(heldReqs, hold("bob"), hold("bob"))

	t.Run("time before the queue counts", func(t *testing.T) {
		// It spent all but a minute of the wait before the queue.
		late := send("bob", fake.Now().Add(-wait+time.Minute))
		waitQueued(t, c, bobTenant, Mutating)
		fake.Step(time.Minute - time.Second)
		stillWaiting(late, "late request, a second before its wait is up")
		fake.Step(time.Second)
		refused(late, "late request at its wait")
	})

	t.Run("both queue levels share one wait", func(t *testing.T) {
		// alice fills the hub-wide budget with bob: 4 of 4.
		heldReqs = append(heldReqs, hold("alice"), hold("alice"))
		start := fake.Now()
		queued := send("bob", start)
		waitQueued(t, c, bobTenant, Mutating)
		// 40 minutes in bob's own queue.
		fake.Step(40 * time.Minute)
		stillWaiting(queued, "after 40 minutes in the tenant queue")
		// carol waits in the hub's queue, so the seat bob frees goes to
		// her, and bob's request moves on to wait in the hub's queue.
		carol := send("carol", fake.Now())
		waitHub(c, 1)
		g.release["bob"] <- struct{}{}
		if got := <-g.entered; got != "carol" {
			t.Fatalf("%s let in, want carol", got)
		}
		heldReqs = append(heldReqs[1:], carol)
		waitHub(c, 1)
		fake.Step(19 * time.Minute)
		stillWaiting(queued, "59 minutes after arrival, in the hub's queue")
		fake.Step(time.Minute)
		refused(queued, "an hour after arrival, 40 minutes of it in the tenant queue")
		if fake.Since(start) != wait {
			t.Fatalf("refused after %v", fake.Since(start))
		}
	})

	for _, ch := range g.release {
		close(ch)
	}
	for _, s := range heldReqs {
		if code := <-s.answered; code != http.StatusCreated {
			t.Fatalf("held request answered %d", code)
		}
	}
}
