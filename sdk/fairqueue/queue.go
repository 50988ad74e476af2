package fairqueue

import (
	"sync"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// DefaultMaxPerTenant is Config.MaxPerTenant's default: enough for any
// honest burst, a few hundred kilobytes of keys per tenant at most.
const DefaultMaxPerTenant = 10000

// Config configures New.
type Config[T comparable] struct {
	// Name names the queue in client-go's workqueue metrics and in logs.
	Name string
	// TenantOf names the tenant of an item, e.g. Tenants.Of of the item's
	// logical cluster. It is called with the queue's lock held, so it must
	// answer from memory and never block. Nil puts every item in one
	// tenant: a plain FIFO queue.
	TenantOf func(T) string
	// MaxPerTenant bounds the items one tenant has waiting; an item added
	// beyond it is dropped until Resync (see the package doc). 0 means
	// DefaultMaxPerTenant; a negative value means no bound.
	MaxPerTenant int
	// Resync is called, from the worker, when it is done with the last
	// waiting item of a tenant that lost items to MaxPerTenant; it must
	// add again that tenant's items that still need work (those that need
	// none would only take turns). Nil leaves recovery to the informer's
	// periodic resync.
	Resync func(tenant string)
	// RateLimiter spaces out AddRateLimited; nil is client-go's controller
	// default (per-item exponential 5 ms to 1000 s, overall 10 qps with a
	// burst of 100).
	RateLimiter workqueue.TypedRateLimiter[T]
	// Clock drives AddAfter and backoff; nil is the real clock.
	Clock clock.WithTicker
}

// New returns client-go's rate-limiting work queue over a store that takes
// turns between tenants, with a bound per tenant (see the package doc). It
// is a drop-in replacement for workqueue.NewTypedRateLimitingQueue.
func New[T comparable](cfg Config[T]) workqueue.TypedRateLimitingInterface[T] {
	if cfg.RateLimiter == nil {
		cfg.RateLimiter = workqueue.DefaultTypedControllerRateLimiter[T]()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.TenantOf == nil {
		cfg.TenantOf = func(T) string { return "" }
	}
	if cfg.MaxPerTenant == 0 {
		cfg.MaxPerTenant = DefaultMaxPerTenant
	}
	inner := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[T]{
		Name: cfg.Name, Clock: cfg.Clock, Queue: NewTurns(cfg.TenantOf, nil)})
	b := &bounded[T]{TypedInterface: inner, cfg: cfg,
		waiting: map[T]string{}, count: map[string]int{}, overflowed: map[string]bool{}, resyncAt: map[T]string{}}
	d := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[T]{
		Name: cfg.Name, Clock: cfg.Clock, Queue: b})
	return workqueue.NewTypedRateLimitingQueueWithConfig(cfg.RateLimiter,
		workqueue.TypedRateLimitingQueueConfig[T]{Name: cfg.Name, Clock: cfg.Clock, DelayingQueue: d})
}

// bounded sits between the delaying queue and the work queue, so every way
// in (Add, AddAfter, AddRateLimited) passes its bound. The bound cannot be
// in the store: the work queue remembers every item added in its own
// dirty set, and an item dropped there would be deduplicated forever.
// waiting mirrors that dirty set for the items it let in.
type bounded[T comparable] struct {
	workqueue.TypedInterface[T]
	cfg        Config[T]
	mu         sync.Mutex
	waiting    map[T]string // item -> tenant, for items added and not yet handed out
	count      map[string]int
	overflowed map[string]bool
	// resyncAt is the last waiting item of an overflowed tenant, handed
	// out: its Done resyncs the tenant, so that the item, done by then, is
	// not queued again.
	resyncAt map[T]string
}

// Add queues item unless its tenant already has MaxPerTenant waiting.
func (b *bounded[T]) Add(item T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.waiting[item]; ok {
		b.TypedInterface.Add(item) // deduplicated; keeps its place
		return
	}
	tenant := b.cfg.TenantOf(item)
	if b.cfg.MaxPerTenant > 0 && b.count[tenant] >= b.cfg.MaxPerTenant {
		if !b.overflowed[tenant] {
			// Once per overflow: the tenant is named, which is the
			// provider's own log, never the hub's.
			klog.InfoS("Fair queue: tenant over its bound, dropping items until it drains", "queue", b.cfg.Name, "tenant", tenant, "max", b.cfg.MaxPerTenant)
			b.overflowed[tenant] = true
		}
		return
	}
	b.waiting[item] = tenant
	b.count[tenant]++
	b.TypedInterface.Add(item)
}

// Get hands out the next item in turn; when that is the last waiting item
// of a tenant that lost items to the bound, its Done resyncs the tenant.
func (b *bounded[T]) Get() (T, bool) {
	item, shutdown := b.TypedInterface.Get()
	if shutdown {
		return item, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	tenant, ok := b.waiting[item]
	if !ok {
		// Added again while a worker held it, in the moment between the
		// work queue's Get and this one: not counted (the bound is exact
		// up to one item per worker).
		return item, false
	}
	delete(b.waiting, item)
	b.count[tenant]--
	if b.count[tenant] == 0 {
		delete(b.count, tenant)
		if b.overflowed[tenant] {
			delete(b.overflowed, tenant)
			b.resyncAt[item] = tenant
		}
	}
	return item, false
}

// Done marks item done and, if it was its tenant's last before a resync,
// calls Resync from the worker.
func (b *bounded[T]) Done(item T) {
	b.TypedInterface.Done(item)
	b.mu.Lock()
	tenant, resync := b.resyncAt[item]
	delete(b.resyncAt, item)
	b.mu.Unlock()
	if resync && b.cfg.Resync != nil {
		b.cfg.Resync(tenant)
	}
}
