package fairness

import "sync"

// Watches counts open watches, per tenant and hub-wide. Each open watch
// holds memory and, over HTTP/1.1, a file descriptor, for as long as the
// client likes: 3,000 of one tenant's exhausted a 1,024 descriptor limit
// (issue 24, B5). A bound of 0 means no limit.
type Watches struct {
	perTenant, total int

	mu      sync.Mutex
	all     int
	tenants map[string]int
}

// NewWatches returns a counter with the given bounds.
func NewWatches(perTenant, total int) *Watches {
	return &Watches{perTenant: perTenant, total: total, tenants: map[string]int{}}
}

// admit counts a watch of tenant, or returns nil when tenant is at its cap
// or the hub at its own. Exempt watches (hub administrators, the hub's
// own informers) count hub-wide but are never refused. The returned func
// ends the count; it may be called more than once.
func (w *Watches) admit(tenant string, exempt bool) (release func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !exempt && ((w.perTenant > 0 && w.tenants[tenant] >= w.perTenant) || (w.total > 0 && w.all >= w.total)) {
		return nil
	}
	w.all++
	if !exempt {
		w.tenants[tenant]++
	}
	var once sync.Once
	return func() { once.Do(func() { w.release(tenant, exempt) }) }
}

func (w *Watches) release(tenant string, exempt bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all--
	if exempt {
		return
	}
	if w.tenants[tenant]--; w.tenants[tenant] <= 0 {
		delete(w.tenants, tenant)
	}
}

// Open reports the open watches hub-wide and of tenant.
func (w *Watches) Open(tenant string) (total, ofTenant int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.all, w.tenants[tenant]
}
