package fairness

import (
	"context"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/utils/clock"

	"github.com/wharfhub/wharf/hub/buckets"
)

// Denial pacing defaults: a tenant's first DenialBurst denials answer at
// once, then DenialRate a second; a denial over that waits for its token,
// at most DenialHold.
const (
	DenialRate  = 10
	DenialBurst = 50
	DenialHold  = time.Second
	// denialTenants bounds the buckets kept; an evicted tenant starts
	// again with a full bucket.
	denialTenants = 10000
)

// denials paces a tenant's 403 answers (authorization, admission, quota)
// while they hold the request's seat. A denial is cheap to compute, so a
// tenant's share of seats spent on requests that are only ever denied
// (B6: 200 requests at a time to a workspace she may not see, each sent
// again as soon as it was answered) came back thousands of times a second,
// and the hub's CPU, not its seats, ran out for everybody: the victim's
// own requests, never queued, were 8x slower at p50. Held for its token,
// a denied request keeps its seat, so her share answers at most a few
// denials a second per seat, and only she waits. People and programs that
// are denied now and then never notice: the burst covers them.
type denials struct {
	clock clock.WithDelayedExecution
	limit rate.Limit
	burst int
	hold  time.Duration

	// held counts denials waiting for their token (tests).
	held atomic.Int32

	buckets *buckets.Keyed[*rate.Limiter]
}

func newDenials(c clock.WithDelayedExecution, perSecond float64, burst int, hold time.Duration) *denials {
	return &denials{clock: c, limit: rate.Limit(perSecond), burst: burst, hold: hold,
		buckets: buckets.New(denialTenants, func() *rate.Limiter { return rate.NewLimiter(rate.Limit(perSecond), burst) })}
}

// delay takes a token for tenant's denial and returns how long to wait
// for it; a wait past the hold gives the token back and waits the hold,
// so a flood leaves no debt behind it.
func (d *denials) delay(tenant string) time.Duration {
	wait := d.hold
	d.buckets.Do(tenant, func(b *rate.Limiter) {
		now := d.clock.Now()
		r := b.ReserveN(now, 1)
		if !r.OK() {
			return
		}
		if wait = r.DelayFrom(now); wait > d.hold {
			r.CancelAt(now)
			wait = d.hold
		}
	})
	return wait
}

// wait blocks tenant's denial until its token, or ctx's end.
func (d *denials) wait(ctx context.Context, tenant string) {
	if d == nil {
		return
	}
	wait := d.delay(tenant)
	if wait <= 0 {
		return
	}
	timer := d.clock.NewTimer(wait)
	defer timer.Stop()
	d.held.Add(1)
	defer d.held.Add(-1)
	select {
	case <-ctx.Done():
	case <-timer.C():
	}
}
