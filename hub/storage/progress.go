package storage

import (
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
)

// CacheProgress knows how far every watch cache has read etcd: the
// revision of the last event or progress notification (bookmark) each
// cache's etcd watch delivered. A compaction past it makes that cache's
// watch fail ("required revision has been compacted", or an event whose
// previous value is gone) and the cache relists, closing every watch of
// its resource, everybody's: the hub's store monitor (hub/storecap)
// compacts for rewrites only up to Safe. Quiet caches move on with the
// progress notifications etcd sends every second (the embedded
// member is configured so; see hub/etcd).
type CacheProgress struct {
	mu     sync.Mutex
	caches map[*boundedHistory]struct{}
}

// NewCacheProgress returns an empty table.
func NewCacheProgress() *CacheProgress {
	return &CacheProgress{caches: map[*boundedHistory]struct{}{}}
}

func (p *CacheProgress) register(b *boundedHistory) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.caches[b] = struct{}{}
}

func (p *CacheProgress) unregister(b *boundedHistory) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.caches, b)
}

// Safe is the least revision every watch cache has read up to; 0 while
// one has read nothing yet (nothing is safe to compact then).
func (p *CacheProgress) Safe() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var safe int64
	first := true
	for b := range p.caches {
		rv := b.seen.Load()
		if first || rv < safe {
			safe, first = rv, false
		}
	}
	return safe
}

// seenRevision records the revision an event from etcd carries.
func seenRevision(seen *atomic.Int64, obj runtime.Object) {
	u, err := storage.APIObjectVersioner{}.ObjectResourceVersion(obj)
	if err != nil {
		return
	}
	rv := int64(u)
	for {
		cur := seen.Load()
		if rv <= cur || seen.CompareAndSwap(cur, rv) {
			return
		}
	}
}
