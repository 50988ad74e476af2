package quota

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/fairness"
)

// Event rate defaults: a workspace may write 20 events a second with
// bursts of 100, a tenant 50 with bursts of 200. Bytes are bounded by the
// storage ceilings; events.k8s.io notes by kube's 1 kB validation; their
// life by --event-ttl.
const (
	DefaultWorkspaceEventQPS   = 20
	DefaultWorkspaceEventBurst = 100
	DefaultTenantEventQPS      = 50
	DefaultTenantEventBurst    = 200
	// limiterCacheSize bounds the buckets kept, as upstream's
	// EventRateLimit bounds its cache: an evicted bucket starts full.
	limiterCacheSize = 4096
)

// EventRate is an admission plugin bounding how fast each workspace and
// each tenant write events (core/v1 and events.k8s.io), with a token
// bucket each, as upstream's EventRateLimit plugin does per namespace.
// Hub administrators and the hub's own recorders are not limited.
type EventRate struct {
	*admission.Handler
	Resolver Resolver
	IsAdmin  func(user.Info) bool
	ws, ten  bucketOptions
	clock    clock.Clock

	mu      sync.Mutex
	buckets *lru.Cache
}

type bucketOptions struct {
	qps   float32
	burst int
}

var _ admission.ValidationInterface = &EventRate{}

// NewEventRate returns the plugin; qps 0 turns a bound off.
func NewEventRate(o *Options, r Resolver, isAdmin func(user.Info) bool, clk clock.Clock) *EventRate {
	return &EventRate{
		Handler: admission.NewHandler(admission.Create, admission.Update), Resolver: r, IsAdmin: isAdmin, clock: clk,
		ws:      bucketOptions{qps: o.WorkspaceEventQPS, burst: o.WorkspaceEventBurst},
		ten:     bucketOptions{qps: o.TenantEventQPS, burst: o.TenantEventBurst},
		buckets: lru.New(limiterCacheSize),
	}
}

// Validate implements admission.ValidationInterface.
func (e *EventRate) Validate(ctx context.Context, attrs admission.Attributes, _ admission.ObjectInterfaces) error {
	gr := attrs.GetResource().GroupResource()
	if gr.Resource != "events" || (gr.Group != "" && gr.Group != "events.k8s.io") || attrs.GetSubresource() != "" {
		return nil
	}
	if hubUser(attrs.GetUserInfo(), e.IsAdmin) {
		return nil
	}
	id, ok := cluster.From(ctx)
	if !ok {
		return nil
	}
	tenant, _, _, err := e.Resolver.Limits(ctx, id)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("resolving the workspace of an event: %w", err))
	}
	if !e.take("workspace/"+string(id), e.ws) {
		return refused(ctx, fmt.Sprintf("limit reached on type Workspace for key %s", id))
	}
	if !e.take("tenant/"+tenant, e.ten) {
		return refused(ctx, fmt.Sprintf("limit reached on type Tenant for key %s", tenant))
	}
	return nil
}

// refused is upstream EventRateLimit's 429. It is answered at once, not
// held: holding it here would keep the request's seats of its tenant's
// share for the hold. So its connection closes, as every refusal not held
// does (fourth outside review, attempt 11: 1,476 of them a second on
// kept-alive connections).
func refused(ctx context.Context, msg string) error {
	fairness.RefusedAtOnce(ctx)
	return apierrors.NewTooManyRequestsError(msg)
}

// take spends a token of key's bucket.
func (e *EventRate) take(key string, o bucketOptions) bool {
	if o.qps <= 0 {
		return true
	}
	e.mu.Lock()
	b, ok := e.buckets.Get(key)
	if !ok {
		b = flowcontrol.NewTokenBucketRateLimiterWithClock(o.qps, o.burst, e.clock)
		e.buckets.Add(key, b)
	}
	e.mu.Unlock()
	return b.(flowcontrol.RateLimiter).TryAccept()
}
