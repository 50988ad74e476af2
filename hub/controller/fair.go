package controller

import (
	"k8s.io/client-go/util/workqueue"
	compbasemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	// Registers the workqueue metrics (workqueue_depth, workqueue_adds_total,
	// ... labelled by queue name only) with the registry /metrics serves.
	_ "k8s.io/component-base/metrics/prometheus/workqueue"
	"k8s.io/utils/clock"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/sdk/fairqueue"
)

// TenantOfCluster names the tenant a logical cluster's background work is
// charged to (hub/fairness TreeOf of its path). It is called with a
// queue's lock held, so it must answer from memory and never block.
type TenantOfCluster func(cluster.ID) string

// queueTenants is the number of tenants with queued work, per queue: one
// tenant's backlog shows as depth with few tenants, without a label per
// tenant.
var queueTenants = compbasemetrics.NewGaugeVec(&compbasemetrics.GaugeOpts{
	Name:           "wharf_controller_queue_tenants",
	Help:           "Tenants with work waiting in a hub controller's fair queue, by queue.",
	StabilityLevel: compbasemetrics.ALPHA,
}, []string{"name"})

// queueTurns counts the items handed out of a fair queue and how many of
// those were a turn of a tenant other than the previous one.
var queueTurns = compbasemetrics.NewCounterVec(&compbasemetrics.CounterOpts{
	Name:           "wharf_controller_queue_tenant_switches_total",
	Help:           "Items a hub controller's fair queue handed out for a tenant other than the previous item's, by queue.",
	StabilityLevel: compbasemetrics.ALPHA,
}, []string{"name"})

func init() {
	legacyregistry.MustRegister(queueTenants, queueTurns)
}

// FairConfig configures NewFair.
type FairConfig[T comparable] struct {
	// Name names the queue in metrics and logs.
	Name string
	// TenantOf names the tenant of an item; it must not block (see
	// TenantOfCluster). A nil TenantOf puts every item in one tenant,
	// which is a plain FIFO queue.
	TenantOf func(T) string
	// RateLimiter spaces out AddRateLimited; nil is the controller
	// default (per-item exponential 5 ms to 1000 s, overall 10 qps).
	RateLimiter workqueue.TypedRateLimiter[T]
	// Clock drives AddAfter; nil is the real clock.
	Clock clock.WithTicker
}

// NewFair returns upstream's rate-limiting work queue (deduplication, one
// worker per item at a time, AddAfter, AddRateLimited, metrics) over a
// store that takes turns between tenants: Get hands out the oldest item of
// the next tenant in turn, each tenant's items in the order added. A
// tenant with a thousand items waiting therefore delays another tenant's
// item by at most one item per other tenant with work, never by its whole
// backlog.
func NewFair[T comparable](cfg FairConfig[T]) workqueue.TypedRateLimitingInterface[T] {
	if cfg.RateLimiter == nil {
		cfg.RateLimiter = workqueue.DefaultTypedControllerRateLimiter[T]()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	store := newTurns(cfg.Name, cfg.TenantOf)
	q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[T]{Name: cfg.Name, Clock: cfg.Clock, Queue: store})
	d := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[T]{Name: cfg.Name, Clock: cfg.Clock, Queue: q})
	return workqueue.NewTypedRateLimitingQueueWithConfig(cfg.RateLimiter,
		workqueue.TypedRateLimitingQueueConfig[T]{Name: cfg.Name, Clock: cfg.Clock, DelayingQueue: d})
}

// NewFairQueue is NewFair without rate limiting, for queues of the
// workqueue.TypedInterface kind.
func NewFairQueue[T comparable](name string, tenantOf func(T) string) workqueue.TypedInterface[T] {
	return workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[T]{Name: name, Queue: newTurns(name, tenantOf)})
}

// newTurns is sdk/fairqueue's store (the providers' fair queues use the
// same), with the queue's metrics when it has a name.
func newTurns[T comparable](name string, tenantOf func(T) string) *fairqueue.Turns[T] {
	var observe fairqueue.Observer
	if name != "" {
		observe = turnMetrics{tenants: queueTenants.WithLabelValues(name), switches: queueTurns.WithLabelValues(name)}
	}
	return fairqueue.NewTurns(tenantOf, observe)
}

// turnMetrics reports a fair queue's tenants and turns.
type turnMetrics struct {
	tenants  compbasemetrics.GaugeMetric
	switches compbasemetrics.CounterMetric
}

func (m turnMetrics) Tenants(n int) { m.tenants.Set(float64(n)) }

func (m turnMetrics) Handed(switched bool) {
	if switched {
		m.switches.Inc()
	}
}
