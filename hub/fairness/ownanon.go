package fairness

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/utils/clock"
)

// Requests without credentials from the hub's own address (127.0.0.1
// beside a hub on loopback, the pod's address in its pod) used to be
// outside every bound, because that address is the hub's operators: its
// provider plugins calling back, kubectl or a browser on its host, a TCP
// proxy there. The sixth outside review (#6) flooded from 127.0.0.1 the
// providers' UI files (another tenant fell from 338 to 10.4 requests a
// second) and the edges agent route (260 to 51). Now that address has
// bounds of its own, those of one address prefix (a fifth of the rate, a
// quarter of the places in flight), which outsiders cannot use up and
// whose use leaves the hub-wide ones to everybody else. Past them a
// request waits for its token and its place, up to ownAnonymousWait,
// instead of being refused at once: a browser loading the portal before
// it signs in, health checks and local scripts are paced, not cut; only a
// flood that keeps more than ownAnonymousWaiting waiting, or would wait
// longer, gets 429. Only the hub's in-process client (OwnDials, which
// always carries a token anyway) and the clients a trusted proxy names
// (which count by their own address) stay outside.

// ownAnonymousWait is the longest a request from the hub's own address
// waits for its token and place: short beside a browser's or a health
// check's patience, long beside a page load's burst of files.
const ownAnonymousWait = 2 * time.Second

// ownAnonymousWaiting bounds the requests waiting at once: each holds a
// goroutine, as a held refusal does (the tarpit's per-prefix bound).
const ownAnonymousWaiting = 128

// ownAnonymous is the own address's rate, places in flight and waiters.
type ownAnonymous struct {
	lim    *rate.Limiter // nil: no rate
	places chan struct{} // nil: no bound in flight
	clock  clock.Clock
	wait   time.Duration

	mu      sync.Mutex
	waiting int // mu
}

func newOwnAnonymous(perSecond float64, burst, places int, c clock.Clock) *ownAnonymous {
	o := &ownAnonymous{clock: c, wait: ownAnonymousWait}
	if perSecond > 0 {
		o.lim = rate.NewLimiter(rate.Limit(perSecond), burst)
	}
	if places > 0 {
		o.places = make(chan struct{}, places)
	}
	return o
}

// admit takes a token and, when place, a place in flight, waiting for
// them up to o.wait in all; release gives the place back.
func (o *ownAnonymous) admit(ctx context.Context, place bool) (release func(), ok bool) {
	if !o.enter() {
		return nil, false
	}
	defer o.leave()
	now := o.clock.Now()
	deadline := now.Add(o.wait)
	if o.lim != nil {
		r := o.lim.ReserveN(now, 1)
		if !r.OK() {
			return nil, false
		}
		if d := r.DelayFrom(now); d > o.wait {
			r.CancelAt(now)
			return nil, false
		} else if d > 0 && !o.sleep(ctx, d) {
			return nil, false
		}
	}
	if !place || o.places == nil {
		return func() {}, true
	}
	select {
	case o.places <- struct{}{}:
		return o.release, true
	default:
	}
	left := deadline.Sub(o.clock.Now())
	if left <= 0 {
		return nil, false
	}
	t := o.clock.NewTimer(left)
	defer t.Stop()
	select {
	case o.places <- struct{}{}:
		return o.release, true
	case <-t.C():
	case <-ctx.Done():
	}
	return nil, false
}

func (o *ownAnonymous) release() { <-o.places }

func (o *ownAnonymous) sleep(ctx context.Context, d time.Duration) bool {
	t := o.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}

func (o *ownAnonymous) enter() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.waiting >= ownAnonymousWaiting {
		return false
	}
	o.waiting++
	return true
}

func (o *ownAnonymous) leave() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.waiting--
}
