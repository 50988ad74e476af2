package quota

import (
	"context"
	"fmt"
	"math"

	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/utils/clock"

	"github.com/wharfhub/wharf/hub/buckets"
	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/fairness"
)

// Write rate defaults: a tenant's requests may write to the store 200
// times a second, 1,000 at once. etcd commits every tenant's writes in
// one sequence, and each write also costs the hub its watch events and
// usage records: the sixth outside review's 4 concurrent deletecollections
// of 3,600 ConfigMaps each took another tenant from 275 to 27 operations
// a second, and a tenant churning workspaces halved his. A `kubectl apply`
// of a thousand objects fits the burst; a bulk job of more is slowed, not
// refused.
const (
	DefaultTenantWritesPerSecond = 200
	DefaultTenantWriteBurst      = 1000
	// writeRateTenants bounds the buckets kept; an evicted tenant starts
	// again with a full bucket.
	writeRateTenants = 10000
)

var writeWaits = metrics.NewCounter(&metrics.CounterOpts{Name: "wharf_tenant_write_wait_seconds_total",
	Help:           "Seconds tenants' writes to the store waited for --tenant-writes-per-second (creates, updates, patches, deletes, each item of a deletecollection).",
	StabilityLevel: metrics.ALPHA})

func init() { legacyregistry.MustRegister(writeWaits) }

// WriteRate paces each tenant's writes to the store with a token bucket:
// a write past the tenant's burst waits for its token, holding its
// request's seats of that tenant's share, so only that tenant waits. A
// write whose wait would outlast its request's deadline is refused with
// 429 and Retry-After instead. Hub administrators and the hub's own work
// (system:masters, WithExempt, no user) are not paced.
type WriteRate struct {
	limit rate.Limit
	burst int
	clock clock.WithTicker
	// IsAdmin reports hub administrators; nil: none but system:masters.
	IsAdmin func(user.Info) bool

	buckets *buckets.Keyed[*rate.Limiter]
}

// NewWriteRate returns the pacer, nil (no pacing) when perSecond is 0.
func NewWriteRate(perSecond float64, burst int, clk clock.WithTicker) *WriteRate {
	if perSecond <= 0 {
		return nil
	}
	return &WriteRate{limit: rate.Limit(perSecond), burst: burst, clock: clk,
		buckets: buckets.New(writeRateTenants, func() *rate.Limiter { return rate.NewLimiter(rate.Limit(perSecond), burst) })}
}

// paced reports whether ctx's writes are paced: a request's, by a user
// who is not a hub administrator.
func (w *WriteRate) paced(ctx context.Context) bool { return tenantCaller(ctx, w.IsAdmin) }

// Wait takes one write of tenant's, waiting for its token if need be. A
// write that is not refusable (a side effect of an admitted request: a
// new workspace's namespaces and bindings) is never refused: past its
// deadline it goes at once, its token taken as a debt that the tenant's
// next writes wait for, rather than leave half-made state.
func (w *WriteRate) Wait(ctx context.Context, tenant string, refusable bool) error {
	if w == nil || !w.paced(ctx) {
		return nil
	}
	now := w.clock.Now()
	var r *rate.Reservation
	w.buckets.Do(tenant, func(b *rate.Limiter) { r = b.ReserveN(now, 1) })
	if !r.OK() {
		return nil
	}
	d := r.DelayFrom(now)
	if d <= 0 {
		return nil
	}
	if deadline, ok := ctx.Deadline(); ok && now.Add(d).After(deadline) {
		if !refusable {
			return nil
		}
		r.CancelAt(now)
		secs := int(math.Ceil(d.Seconds()))
		return apierrors.NewTooManyRequests(fmt.Sprintf("the writes of tenant %s are over their rate (--tenant-writes-per-second)", tenant), secs)
	}
	writeWaits.Add(d.Seconds())
	// Waiting is no CPU work: its turn is another request's meanwhile.
	defer fairness.Aside(ctx)()
	t := w.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		if !refusable {
			return nil // the store's call fails on ctx itself
		}
		r.CancelAt(w.clock.Now())
		return apierrors.NewTimeoutError(fmt.Sprintf("waiting for the write rate of tenant %s: %v", tenant, ctx.Err()), 1)
	}
}

// paceWrite waits for a write of gr to cluster id by its tenant's rate;
// only the write the request asked for may be refused.
func (a *Accountant) paceWrite(ctx context.Context, gr schema.GroupResource, id cluster.ID) error {
	if a.Writes == nil || !a.Writes.paced(ctx) {
		return nil
	}
	tenant, _, _, err := a.Resolver.Limits(ctx, id)
	if err != nil {
		// The reservation that follows resolves it again and says why.
		return nil
	}
	return a.Writes.Wait(ctx, tenant, requestedWrite(ctx, gr))
}

// requestedWrite reports whether a storage write of gr is the one ctx's
// request asked for (each item of a deletecollection included), not a
// side effect of it.
func requestedWrite(ctx context.Context, gr schema.GroupResource) bool {
	info, ok := requestOn(ctx, gr)
	if !ok {
		return false
	}
	switch info.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// tokens is what tenant's bucket holds now (tests).
func (w *WriteRate) tokens(tenant string) float64 {
	var n float64
	w.buckets.Do(tenant, func(b *rate.Limiter) { n = b.TokensAt(w.clock.Now()) })
	return n
}
