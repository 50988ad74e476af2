package fairness

import (
	"context"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/utils/clock"
)

// RefusalHold is how long after its arrival a refused request is answered:
// the Retry-After the 429 carries.
const RefusalHold = time.Second

// tarpit holds a request refused at once (its tenant's queue was full, or
// its watch cap reached) until RefusalHold after its arrival, then lets the
// 429 go. A client that honours Retry-After sees no difference. One that
// does not (the outside review's B6 flood: 200 concurrent requests, each
// sent again the moment its 429 arrived) otherwise turned every refusal
// into another request at once: ~1,300 refusals a second, each paid in
// TLS, authentication and encoding, left a victim tenant 24x slower at p50
// although its own requests were never queued. Held, a tenant's refusals
// come at most as fast as its connections allow one per second each.
//
// Holding costs a goroutine and a connection the client already holds, so
// holds are bounded per tenant and hub-wide; past either bound the 429 is
// immediate, as upstream's.
type tarpit struct {
	clock     clock.WithDelayedExecution
	hold      time.Duration
	perTenant int
	total     int

	mu   sync.Mutex
	held map[string]int // mu; by tenant
	all  int            // mu
}

func newTarpit(c clock.WithDelayedExecution, hold time.Duration, perTenant, total int) *tarpit {
	return &tarpit{clock: c, hold: hold, perTenant: perTenant, total: total, held: map[string]int{}}
}

// wait blocks until hold after the request's arrival, ctx's end, or at
// once when the bounds are reached (then it reports false) or the request
// has waited long enough.
func (t *tarpit) wait(ctx context.Context, tenant string) bool {
	if t == nil || t.hold <= 0 {
		return true
	}
	left := arrival(ctx, t.clock).Add(t.hold).Sub(t.clock.Now())
	if left <= 0 {
		return true
	}
	if !t.take(tenant) {
		return false
	}
	defer t.give(tenant)
	timer := t.clock.NewTimer(left)
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-timer.C():
	}
	return true
}

func (t *tarpit) take(tenant string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held[tenant] >= t.perTenant || t.all >= t.total {
		return false
	}
	t.held[tenant]++
	t.all++
	return true
}

func (t *tarpit) give(tenant string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held[tenant]--; t.held[tenant] <= 0 {
		delete(t.held, tenant)
	}
	t.all--
}

// holding is the number of requests held, for tests.
func (t *tarpit) holding() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.all
}

// arrival is when the request reached the hub (upstream's received
// timestamp), or now when that is unknown or in the future.
func arrival(ctx context.Context, c clock.PassiveClock) time.Time {
	now := c.Now()
	if t, ok := request.ReceivedTimestampFrom(ctx); ok && !t.IsZero() && t.Before(now) {
		return t
	}
	return now
}

// ShareRefusals makes c hold its refusals in from's tarpit and pace its
// denials with from's buckets, within the same bounds: the provider
// routes' flow control (filter.go) and the API's hold a tenant's refusals
// and pace its 403s together, so a tenant flooding both gets no more than
// one alone. A nil from leaves c's own. Call it before c serves.
func (c *Controller) ShareRefusals(from *Controller) {
	if from != nil {
		c.tarpit, c.denials = from.tarpit, from.denials
		// One traffic budget too: a provider route's answers are
		// charged to the caller's tenant as the API's are (third
		// review, C-G: 160 MB/s of provider answers counted nowhere).
		c.traffic = from.traffic
	}
}
