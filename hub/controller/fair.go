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

// turns is the workqueue.Queue under a fair queue: a FIFO per tenant and a
// ring of the tenants that have items. The workqueue calls it with its
// lock held, from one goroutine at a time.
type turns[T comparable] struct {
	name     string
	tenantOf func(T) string
	byTenant map[string]*fifo[T]
	ring     fifo[string] // tenants with items, in turn order
	n        int
	last     string
	tenants  compbasemetrics.GaugeMetric
	switches compbasemetrics.CounterMetric
}

func newTurns[T comparable](name string, tenantOf func(T) string) *turns[T] {
	t := &turns[T]{name: name, tenantOf: tenantOf, byTenant: map[string]*fifo[T]{}}
	if name != "" {
		t.tenants, t.switches = queueTenants.WithLabelValues(name), queueTurns.WithLabelValues(name)
	}
	return t
}

func (t *turns[T]) tenant(item T) string {
	if t.tenantOf == nil {
		return ""
	}
	return t.tenantOf(item)
}

// Touch is called when a queued item is added again: it keeps its place.
func (t *turns[T]) Touch(T) {}

// Push appends item to its tenant's FIFO; a tenant with no items waiting
// joins the end of the ring.
func (t *turns[T]) Push(item T) {
	name := t.tenant(item)
	q := t.byTenant[name]
	if q == nil {
		q = &fifo[T]{}
		t.byTenant[name] = q
		t.ring.push(name)
		if t.tenants != nil {
			t.tenants.Set(float64(len(t.byTenant)))
		}
	}
	q.push(item)
	t.n++
}

// Len is the number of items waiting, of every tenant.
func (t *turns[T]) Len() int { return t.n }

// Pop hands out the oldest item of the tenant whose turn it is; that
// tenant goes to the end of the ring if it has more.
func (t *turns[T]) Pop() T {
	name := t.ring.pop()
	q := t.byTenant[name]
	item := q.pop()
	t.n--
	if q.len() == 0 {
		delete(t.byTenant, name)
		if t.tenants != nil {
			t.tenants.Set(float64(len(t.byTenant)))
		}
	} else {
		t.ring.push(name)
	}
	if name != t.last && t.switches != nil {
		t.switches.Inc()
	}
	t.last = name
	return item
}

// fifo is a slice queue that releases its head's memory.
type fifo[T any] struct {
	items []T
	head  int
}

func (f *fifo[T]) push(x T) { f.items = append(f.items, x) }

func (f *fifo[T]) len() int { return len(f.items) - f.head }

func (f *fifo[T]) pop() T {
	var zero T
	x := f.items[f.head]
	f.items[f.head] = zero
	f.head++
	if f.head == len(f.items) {
		f.items, f.head = f.items[:0], 0
	} else if f.head > 64 && f.head*2 > len(f.items) {
		// Compact once the dead head outweighs the live items.
		f.items = append(f.items[:0:0], f.items[f.head:]...)
		f.head = 0
	}
	return x
}
