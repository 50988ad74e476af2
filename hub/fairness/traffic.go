package fairness

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
	"k8s.io/utils/lru"
)

// Traffic budget defaults: per CPU the hub runs on (GOMAXPROCS), each
// tenant may move TrafficBytesPerCPU a second, request bodies and
// responses together, after a burst of TrafficBurst.
const (
	TrafficBytesPerCPU = 8 << 20
	TrafficBurst       = 64 << 20
	// trafficTenants bounds the buckets kept; an evicted tenant starts
	// again with a full bucket.
	trafficTenants = 10000
)

// traffic is each tenant's budget of bytes moved: the bytes of its
// requests' bodies the hub read and what it wrote back to them. Seats bound how
// many requests of a tenant run at once, not how fast they come back:
// the second review's B-C, 40 concurrent GETs of cached OpenAPI and
// discovery documents (1-2 seats each), were answered 1,300 times a
// second, and encrypting and sending a few hundred MB a second took both
// cores while every other tenant's requests waited for a CPU. A request
// is charged once it is done (its size is known only then), and the next
// ones of its tenant wait before their seats while the tenant is in
// debt, at most until the queue wait ends, then 429 as any refusal. The
// debt is bounded by the burst, so one overshoot (a big list) costs its
// tenant at most burst/rate of waiting. A tenant within its budget never
// waits: a few hundred KB of ordinary requests a second is far below it.
type traffic struct {
	clock clock.WithDelayedExecution
	rate  float64 // bytes a second
	burst float64
	// waiters bounds a tenant's requests waiting for its debt to be
	// paid; past it, the refusal is immediate (tarpitted).
	waiters int

	mu      sync.Mutex
	buckets *lru.Cache // mu; tenant -> *bytesBucket
}

// bytesBucket is one tenant's budget: tokens at the time at, which may
// be negative (debt) down to -burst; waiting counts requests blocked on
// it.
type bytesBucket struct {
	tokens  float64
	at      time.Time
	waiting int
}

func newTraffic(c clock.WithDelayedExecution, perSecond float64, burst int64, waiters int) *traffic {
	if perSecond <= 0 {
		return nil
	}
	return &traffic{clock: c, rate: perSecond, burst: float64(max(burst, 1)), waiters: max(waiters, 1), buckets: lru.New(trafficTenants)}
}

// bucketLocked returns tenant's bucket refilled to now.
func (t *traffic) bucketLocked(tenant string, now time.Time) *bytesBucket {
	v, ok := t.buckets.Get(tenant)
	if !ok {
		b := &bytesBucket{tokens: t.burst, at: now}
		t.buckets.Add(tenant, b)
		return b
	}
	b := v.(*bytesBucket)
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(t.burst, b.tokens+d.Seconds()*t.rate)
		b.at = now
	}
	return b
}

// charge takes n bytes from tenant's budget, down to -burst.
func (t *traffic) charge(tenant string, n int64) {
	if t == nil || n <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.bucketLocked(tenant, t.clock.Now())
	b.tokens = max(-t.burst, b.tokens-float64(n))
}

// wait blocks while tenant is in debt. It reports false, at once, when
// the debt would outlast deadline (the end of the request's queue wait;
// zero: none) or too many of the tenant's requests wait already, and
// when ctx ends: the request is then refused.
func (t *traffic) wait(ctx context.Context, deadline time.Time, tenant string) bool {
	if t == nil {
		return true
	}
	t.mu.Lock()
	now := t.clock.Now()
	b := t.bucketLocked(tenant, now)
	if b.tokens >= 0 {
		t.mu.Unlock()
		return true
	}
	delay := time.Duration(-b.tokens / t.rate * float64(time.Second))
	if (!deadline.IsZero() && now.Add(delay).After(deadline)) || b.waiting >= t.waiters {
		t.mu.Unlock()
		return false
	}
	b.waiting++
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		b.waiting--
		t.mu.Unlock()
	}()
	timer := t.clock.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C():
		return true
	}
}
