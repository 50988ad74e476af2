// Package buckets keeps one value per key (a token bucket: a client
// address's, a tenant's) in a bounded LRU, under one lock.
//
// The hub limits several things per key: login attempts per client
// address (hub/login), 403 answers and bytes moved per tenant
// (hub/fairness). Each needs the same small store: a value created full
// on first use, found again by key, and forgotten least recently used
// first so that a flood of distinct keys costs bounded memory. An evicted
// key starts again with a fresh value, which only helps a caller that
// already controls more keys than the store holds.
package buckets

import (
	"sync"
	"sync/atomic"

	"k8s.io/utils/lru"
)

// Keyed holds up to a fixed number of values by key. Its methods run a
// function on a key's value with the store's lock held, so the function
// may read and change the value but must not block.
type Keyed[V any] struct {
	fresh func() V

	mu    sync.Mutex
	cache *lru.Cache // mu; key -> V
	// used is set once a key is first held; keys are never removed
	// but by eviction, so the store is empty while it is unset.
	used atomic.Bool
}

// New returns a store of at most size keys; fresh makes a key's first
// value.
func New[V any](size int, fresh func() V) *Keyed[V] {
	return &Keyed[V]{fresh: fresh, cache: lru.New(size)}
}

// Do runs f on key's value, made fresh if the key is not held.
func (k *Keyed[V]) Do(key string, f func(V)) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var v V
	if got, ok := k.cache.Get(key); ok {
		v = got.(V)
	} else {
		v = k.fresh()
		k.cache.Add(key, v)
		k.used.Store(true)
	}
	f(v)
}

// Peek runs f on key's value if the key is held, and reports whether it
// was; it never adds a key.
func (k *Keyed[V]) Peek(key string, f func(V)) bool {
	if !k.used.Load() {
		// Empty, with no lock taken: every request asks the
		// failed-authentication throttle (RateLimiter.Exhausted,
		// hub/login), and while nobody fails nothing is held.
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	got, ok := k.cache.Get(key)
	if ok {
		f(got.(V))
	}
	return ok
}

// Len reports how many keys are held.
func (k *Keyed[V]) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cache.Len()
}
