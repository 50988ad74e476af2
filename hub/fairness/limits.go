package fairness

import (
	"math"
	"sync"
)

// Kind is the budget a request counts against.
type Kind int

const (
	// ReadOnly is get, list and watch, as upstream's max-in-flight filter.
	ReadOnly Kind = iota
	// Mutating is every other verb.
	Mutating
)

// Limits are the hub-wide budgets and each tenant's share of them. A
// budget of 0 means no limit, as upstream's flags.
type Limits struct {
	ReadOnly, Mutating             int
	TenantReadOnly, TenantMutating int
}

// NewLimits derives each tenant's share from the budgets: fraction of
// each, rounded up, at least one slot.
func NewLimits(readOnly, mutating int, fraction float64) Limits {
	share := func(total int) int {
		if total <= 0 {
			return 0
		}
		return max(1, int(math.Ceil(float64(total)*fraction)))
	}
	return Limits{ReadOnly: readOnly, Mutating: mutating, TenantReadOnly: share(readOnly), TenantMutating: share(mutating)}
}

// Limiter counts requests in flight, hub-wide and per tenant. It keeps an
// entry only for tenants with requests in flight, so its memory is bounded
// by the budgets, not by the number of tenants ever seen.
type Limiter struct {
	limits Limits

	mu      sync.Mutex
	total   [2]int
	tenants map[string]*[2]int
}

// NewLimiter returns a limiter with nothing in flight.
func NewLimiter(l Limits) *Limiter {
	return &Limiter{limits: l, tenants: map[string]*[2]int{}}
}

func (l *Limiter) bounds(k Kind) (total, tenant int) { return l.limits.bounds(k) }

func (l Limits) bounds(k Kind) (total, tenant int) {
	if k == Mutating {
		return l.Mutating, l.TenantMutating
	}
	return l.ReadOnly, l.TenantReadOnly
}

// Acquire takes a slot for tenant, or reports false when the hub-wide
// budget or the tenant's share of it is used up. The caller must call
// release exactly once when the request is done.
func (l *Limiter) Acquire(tenant string, k Kind) (release func(), ok bool) {
	total, share := l.bounds(k)
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.tenants[tenant]
	if c == nil {
		c = &[2]int{}
	}
	if (total > 0 && l.total[k] >= total) || (share > 0 && c[k] >= share) {
		return nil, false
	}
	l.total[k]++
	c[k]++
	l.tenants[tenant] = c
	var once sync.Once
	return func() { once.Do(func() { l.release(tenant, k) }) }, true
}

func (l *Limiter) release(tenant string, k Kind) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total[k]--
	c := l.tenants[tenant]
	c[k]--
	if c[ReadOnly] == 0 && c[Mutating] == 0 {
		delete(l.tenants, tenant)
	}
}

// InFlight reports the requests in flight of kind k, hub-wide and of
// tenant; for tests and metrics.
func (l *Limiter) InFlight(tenant string, k Kind) (total, ofTenant int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.tenants[tenant]; c != nil {
		ofTenant = c[k]
	}
	return l.total[k], ofTenant
}
