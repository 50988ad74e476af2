package fairness

import (
	"context"
	"time"

	"k8s.io/utils/clock"

	"github.com/wharfhub/wharf/hub/buckets"
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
	// debtBursts is how deep, in bursts, a tenant's debt may go: what
	// moved past it is forgiven. Admission keeps a tenant's debt far
	// above it; it bounds how long one overshoot keeps a tenant waiting
	// (at most debtBursts+1 bursts over the rate).
	debtBursts = 4
)

// traffic is each tenant's budget of bytes moved: the bytes of its
// requests' bodies the hub read and what it wrote back to them, before
// compression, on the API and on the provider routes. Seats bound how
// many requests of a tenant run at once, not how fast they come back:
// the second review's B-C, 40 concurrent GETs of cached OpenAPI and
// discovery documents (1-2 seats each), were answered 1,300 times a
// second, and encrypting and sending a few hundred MB a second took both
// cores while every other tenant's requests waited for a CPU.
//
// Bytes are charged as they are read and written (meter), not when a
// request is done: the third review found that charging after the fact
// let through everything a watch sent once registered (C-D: 190 watches
// of a 900 KB object streamed 320 MB/s), every list admitted before the
// first one was charged (C-H: 40 lists of 6.3 MB at once, 64 MB/s
// against 16), and, counted compressed, 260 MB/s of JSON built for
// 0.2 MB/s charged. A request is admitted only while its tenant's bucket
// covers what its requests already in flight are expected to move (their
// learned sizes, estimate.go); otherwise it waits, within its queue wait,
// then 429 as any refusal. A watch whose tenant is in debt is ended
// before its next event is written, as kube-apiserver ends a watcher
// that cannot keep up: the client watches again and meets the wait. The
// debt is kept down to debtBursts bursts, not forgiven at one burst: a
// floor at one burst let every byte past it go uncharged. A tenant within its budget never waits: a
// few hundred KB of ordinary requests a second is far below it.
type traffic struct {
	clock clock.WithDelayedExecution
	rate  float64 // bytes a second
	burst float64
	// waiters bounds a tenant's requests waiting for its debt to be
	// paid; past it, the refusal is immediate (tarpitted).
	waiters int
	// eventBytes is the least a watch event costs (watchEventBytes).
	eventBytes int64

	buckets *buckets.Keyed[*bytesBucket]
}

// bytesBucket is one tenant's budget: tokens at the time at, which may
// be negative (debt) down to -debtBursts × burst; inflight is what its admitted
// requests are expected to move still; waiting counts requests blocked
// on it.
type bytesBucket struct {
	tokens   float64
	at       time.Time
	inflight float64
	waiting  int
	// freed, when set, is closed once a request's count in flight
	// ends, so that waiters look again then rather than only when the
	// debt they computed would be paid.
	freed chan struct{}
}

func newTraffic(c clock.WithDelayedExecution, perSecond float64, burst int64, waiters int) *traffic {
	if perSecond <= 0 {
		return nil
	}
	t := &traffic{clock: c, rate: perSecond, burst: float64(max(burst, 1)), waiters: max(waiters, 1), eventBytes: watchEventBytes(perSecond)}
	t.buckets = buckets.New(trafficTenants, func() *bytesBucket { return &bytesBucket{tokens: t.burst, at: t.clock.Now()} })
	return t
}

// do runs f on tenant's bucket refilled to now.
func (t *traffic) do(tenant string, f func(b *bytesBucket, now time.Time)) {
	now := t.clock.Now()
	t.buckets.Do(tenant, func(b *bytesBucket) {
		if d := now.Sub(b.at); d > 0 {
			b.tokens = min(t.burst, b.tokens+d.Seconds()*t.rate)
			b.at = now
		}
		f(b, now)
	})
}

// admit blocks while tenant's bucket does not cover what its requests in
// flight are expected to move, then counts expect bytes in flight for the
// new request and returns its meter. It returns nil, at once, when the
// wait would outlast deadline (the end of the request's queue wait; zero:
// none) or too many of the tenant's requests wait already, and when ctx
// ends: the request is then refused. A nil traffic admits everything with
// a nil meter.
func (t *traffic) admit(ctx context.Context, deadline time.Time, tenant string, expect int64) (*meter, bool) {
	if t == nil {
		return nil, true
	}
	waited := false
	for {
		var delay time.Duration
		var freed chan struct{}
		admitted, refused := false, false
		t.do(tenant, func(b *bytesBucket, now time.Time) {
			if waited {
				b.waiting--
				waited = false
			}
			short := b.inflight - b.tokens
			if short <= 0 {
				admitted = true
				b.inflight += float64(max(expect, 0))
				return
			}
			delay = max(time.Duration(short/t.rate*float64(time.Second)), time.Millisecond)
			if (!deadline.IsZero() && now.Add(delay).After(deadline)) || b.waiting >= t.waiters {
				refused = true
				return
			}
			b.waiting++
			waited = true
			if b.freed == nil {
				b.freed = make(chan struct{})
			}
			freed = b.freed
		})
		switch {
		case admitted:
			return &meter{t: t, tenant: tenant, expected: max(expect, 0)}, true
		case refused:
			return nil, false
		}
		timer := t.clock.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			t.do(tenant, func(b *bytesBucket, _ time.Time) { b.waiting-- })
			return nil, false
		case <-timer.C():
		case <-freed:
			timer.Stop()
		}
	}
}

// meterOf is a meter for a request of tenant that was admitted without
// counting anything in flight (a delegated call back, delegation.go); nil
// when there is no budget.
func (t *traffic) meterOf(tenant string) *meter {
	if t == nil {
		return nil
	}
	return &meter{t: t, tenant: tenant}
}

// eventBytes is the least a watch event costs its meter's tenant; 0 for
// a nil meter.
func (m *meter) eventBytes() int64 {
	if m == nil {
		return 0
	}
	return m.t.eventBytes
}

// meter charges one admitted request's bytes to its tenant as they move.
// Its methods may be called from several goroutines (the handler may run
// in one of its own); a nil meter charges nothing.
type meter struct {
	t      *traffic
	tenant string
	// expected is what is still counted in flight for this request:
	// what it was expected to move less what it has moved.
	expected int64
	closed   bool
}

// take charges n bytes. With gate set, and the tenant in debt, it charges
// nothing and reports false: the bytes must not be sent (a watch event).
// Check and charge are one step, so watches writing at once overshoot
// the budget by at most one event.
func (m *meter) take(n int64, gate bool) bool {
	if m == nil || n <= 0 {
		return true
	}
	ok := true
	m.t.do(m.tenant, func(b *bytesBucket, _ time.Time) {
		if gate && b.tokens < 0 {
			ok = false
			return
		}
		b.tokens = max(-debtBursts*m.t.burst, b.tokens-float64(n))
		if !m.closed {
			r := min(n, m.expected)
			m.expected -= r
			b.inflight = max(0, b.inflight-float64(r))
		}
	})
	return ok
}

// spend charges tenant n bytes spent by a request that was refused (it
// has no meter).
func (t *traffic) spend(tenant string, n int64) {
	if t == nil || n <= 0 {
		return
	}
	t.do(tenant, func(b *bytesBucket, _ time.Time) { b.tokens = max(-debtBursts*t.burst, b.tokens-float64(n)) })
}

// charge charges n bytes already spent (CPU work weighed in bytes, not
// gated: it is done) and reports whether the tenant is then in debt.
func (m *meter) charge(n int64) (inDebt bool) {
	if m == nil || n <= 0 {
		return false
	}
	m.take(n, false)
	m.t.do(m.tenant, func(b *bytesBucket, _ time.Time) { inDebt = b.tokens < 0 })
	return inDebt
}

// close ends the request's count in flight; later bytes are still
// charged.
func (m *meter) close() {
	if m == nil {
		return
	}
	m.t.do(m.tenant, func(b *bytesBucket, _ time.Time) {
		if !m.closed {
			m.closed = true
			b.inflight = max(0, b.inflight-float64(m.expected))
			m.expected = 0
			if b.freed != nil {
				close(b.freed)
				b.freed = nil
			}
		}
	})
}

// pace charges n bytes already sent and, when that leaves the tenant in
// debt, waits until the debt is paid or ctx ends: the answer is slowed to
// the tenant's rate (provider routes, whose sizes are not learned, so
// that admission alone cannot bound them). Waiting holds the request's
// seat, so a tenant's paced answers hold its own share only.
func (m *meter) pace(ctx context.Context, n int64) {
	if m == nil || n <= 0 {
		return
	}
	var debt float64
	m.t.do(m.tenant, func(b *bytesBucket, _ time.Time) {
		b.tokens = max(-debtBursts*m.t.burst, b.tokens-float64(n))
		debt = -b.tokens
	})
	if debt <= 0 {
		return
	}
	timer := m.t.clock.NewTimer(time.Duration(debt / m.t.rate * float64(time.Second)))
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-timer.C():
	}
}
