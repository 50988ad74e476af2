package fairqueue

// Turns is the workqueue.Queue (k8s.io/client-go/util/workqueue) under a
// fair queue: a FIFO per tenant and a ring of the tenants that have items,
// so Pop hands out the oldest item of the tenant whose turn it is. The
// work queue calls it with its lock held, one call at a time. The hub's
// own controllers (hub/controller) use it too, with metrics.
type Turns[T comparable] struct {
	tenantOf func(T) string
	observe  Observer
	byTenant map[string]*fifo[T]
	ring     fifo[string] // tenants with items, in turn order
	n        int
	last     string
}

// Observer is told what a Turns does, for metrics; it is called with the
// work queue's lock held, so it must not block.
type Observer interface {
	// Tenants is called with the number of tenants with items waiting
	// whenever it changes.
	Tenants(n int)
	// Handed is called for each item handed out; switched says its
	// tenant is not the previous item's.
	Handed(switched bool)
}

// NewTurns returns an empty store; tenantOf names an item's tenant (nil:
// one tenant, a plain FIFO), observe may be nil.
func NewTurns[T comparable](tenantOf func(T) string, observe Observer) *Turns[T] {
	return &Turns[T]{tenantOf: tenantOf, observe: observe, byTenant: map[string]*fifo[T]{}}
}

func (t *Turns[T]) tenant(item T) string {
	if t.tenantOf == nil {
		return ""
	}
	return t.tenantOf(item)
}

// Touch is called when a waiting item is added again: it keeps its place.
func (t *Turns[T]) Touch(T) {}

// Push appends item to its tenant's FIFO; a tenant with no items waiting
// joins the end of the ring.
func (t *Turns[T]) Push(item T) {
	name := t.tenant(item)
	q := t.byTenant[name]
	if q == nil {
		q = &fifo[T]{}
		t.byTenant[name] = q
		t.ring.push(name)
		if t.observe != nil {
			t.observe.Tenants(len(t.byTenant))
		}
	}
	q.push(item)
	t.n++
}

// Len is the number of items waiting, of every tenant.
func (t *Turns[T]) Len() int { return t.n }

// Pop hands out the oldest item of the tenant whose turn it is; that
// tenant goes to the end of the ring if it has more.
func (t *Turns[T]) Pop() T {
	name := t.ring.pop()
	q := t.byTenant[name]
	item := q.pop()
	t.n--
	if q.len() == 0 {
		delete(t.byTenant, name)
		if t.observe != nil {
			t.observe.Tenants(len(t.byTenant))
		}
	} else {
		t.ring.push(name)
	}
	if t.observe != nil {
		t.observe.Handed(name != t.last)
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
