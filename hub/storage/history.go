package storage

import (
	"context"
	"io"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// HistoryLimit bounds the bytes of deleted and replaced objects that a
// resource's watch cache keeps in its event history (historyring.go says
// why upstream keeps them: it has a count and a time window, no byte
// bound, and trims only when new events arrive).
//
// Once the estimate has stayed over Bytes for Grace, the hub ends the
// watch the cache reads from etcd with "410 resource version too old", as
// etcd itself does after a compaction. The
// cache then relists, which empties its history and list snapshots
// (upstream's watchCache.Replace), and the held objects become garbage.
// The price is upstream's for any relist: the cache's watchers of that
// one resource are closed and re-establish (informers relist); so it
// happens at most once per MinInterval per resource. Upstream would keep
// the objects until as many new events of that resource arrive, which on
// a quiet resource is never: 150 MB of deleted ConfigMaps still held
// minutes later, in the outside test of issue 24.
type HistoryLimit struct {
	// Bytes is the bound; 0 disables it.
	Bytes int64
	// Shares, if set, attributes the history to tenants and bounds each
	// one's share (historyshare.go).
	Shares *HistoryShares
	// Progress, if set, learns how far each cache has read (progress.go).
	Progress *CacheProgress
	// Grace is how long the estimate must stay over Bytes: a burst of
	// deletes is over, and the relist does not come in its middle.
	Grace time.Duration
	// MinInterval is the least time between two relists of a resource.
	MinInterval time.Duration
}

// Defaults: the history may be over its bound for 10 s; a resource's
// watchers are re-established at most once a minute.
const (
	DefaultHistoryBytes       = 32 << 20
	DefaultHistoryGrace       = 10 * time.Second
	DefaultHistoryMinInterval = time.Minute
)

// boundedHistory is the storage the watch cache reads from: the etcd3
// store, with its watch events observed to keep historyRing up to date
// (when the limit is set) and its DELETED events slimmed (slim.go).
type boundedHistory struct {
	storage.Interface
	gr    schema.GroupResource
	codec runtime.Codec
	limit HistoryLimit
	clk   clock.WithDelayedExecution
	slim  slimmer

	mu        sync.Mutex
	ring      *historyRing
	current   *historyWatch // the cache's reflector reads this one
	overSince time.Time     // zero while under the bound
	lastReset time.Time
	timer     clock.Timer
	// released is set when the hub ended the cache's watch; the next
	// Watch comes after the relist replaced the history.
	released bool
	// seen is the revision of the last event or bookmark the cache read
	// from etcd (progress.go).
	seen atomic.Int64
	// fresh asks for progress when a consistent read would wait
	// (freshness.go).
	fresh freshness
}

func newBoundedHistory(s storage.Interface, gr schema.GroupResource, codec runtime.Codec, fresh time.Duration, limit HistoryLimit, c clock.Clock, slim slimmer) *boundedHistory {
	// Both clocks the hub passes (the real one, tests' fake one) time
	// delayed functions; any other falls back to the real one.
	clk, ok := c.(clock.WithDelayedExecution)
	if !ok {
		clk = clock.RealClock{}
	}
	b := &boundedHistory{Interface: s, gr: gr, codec: codec, limit: limit, clk: clk, slim: slim, ring: newHistoryRing(fresh)}
	limit.Shares.register(gr, b)
	limit.Progress.register(b)
	return b
}

// heldBy is what tenant's objects take in the history.
func (b *boundedHistory) heldBy(tenant string) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ring.byOwner[tenant]
}

// GetList is the cache's (re)list: it empties the cache's history.
func (b *boundedHistory) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	if err := b.Interface.GetList(ctx, key, opts, listObj); err != nil {
		return err
	}
	b.mu.Lock()
	b.ring.reset()
	b.overSince = time.Time{}
	b.mu.Unlock()
	// The cache has read everything up to its list.
	seenRevision(&b.seen, listObj)
	return nil
}

func (b *boundedHistory) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	w, err := b.Interface.Watch(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	hw := &historyWatch{inner: w, out: make(chan watch.Event), stop: make(chan struct{}), expire: make(chan struct{})}
	b.mu.Lock()
	b.current = hw
	released := b.released
	b.released = false
	b.mu.Unlock()
	if released {
		// The reflector watches again once the relist has replaced the
		// history, so what it held is garbage now. Go would give the
		// pages back to the OS only slowly (the issue saw 1.6 GB RSS
		// minutes later); this costs one collection, at most once per
		// MinInterval per resource.
		go debug.FreeOSMemory()
	}
	go hw.run(func(ev watch.Event) {
		if ev.Type != watch.Error {
			obj := ev.Object
			if t, ok := obj.(storage.WatchEventWithRecordTime); ok {
				obj = t.Unwrap()
			}
			seenRevision(&b.seen, obj)
		}
		b.observe(ev)
	}, b.slim.slim)
	return hw, nil
}

// observe accounts one event the cache is about to put in its history.
func (b *boundedHistory) observe(ev watch.Event) {
	if b.limit.Bytes <= 0 {
		return
	}
	var dead int64
	obj := ev.Object
	switch ev.Type {
	case watch.Added:
	case watch.Modified, watch.Deleted:
		if t, ok := obj.(storage.WatchEventWithRecordTime); ok {
			obj = t.Unwrap()
		}
		dead = b.sizeOf(obj)
	default: // bookmarks and errors are not kept
		return
	}
	var owner string
	if dead > 0 {
		owner = b.limit.Shares.ownerOf(obj)
	}
	now := b.clk.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ring.addFor(now, dead, owner)
	if b.ring.total <= b.limit.Bytes {
		b.overSince = time.Time{}
		return
	}
	if b.overSince.IsZero() {
		b.overSince = now
	}
	if b.timer == nil {
		b.timer = b.clk.AfterFunc(b.limit.Grace, b.checkLater)
	}
}

// checkLater runs check on a goroutine of its own: a fake clock calls
// delayed functions while it holds its lock, which check's Now needs.
func (b *boundedHistory) checkLater() { go b.check() }

// check ends the cache's watch when the history has been over its bound
// for Grace and the last relist is MinInterval ago, or checks again then.
func (b *boundedHistory) check() {
	b.mu.Lock()
	b.timer = nil
	if b.ring.total <= b.limit.Bytes || b.overSince.IsZero() {
		b.mu.Unlock()
		return
	}
	now := b.clk.Now()
	wait := b.overSince.Add(b.limit.Grace).Sub(now)
	if !b.lastReset.IsZero() {
		wait = max(wait, b.lastReset.Add(b.limit.MinInterval).Sub(now))
	}
	if wait > 0 {
		b.timer = b.clk.AfterFunc(wait, b.checkLater)
		b.mu.Unlock()
		return
	}
	held, w := b.ring.total, b.current
	b.lastReset = now
	b.overSince = time.Time{}
	b.released = true
	b.ring.reset()
	b.mu.Unlock()
	klog.InfoS("Watch cache history holds deleted or replaced objects over its bound; relisting to release them",
		"group", b.gr.Group, "resource", b.gr.Resource, "estimatedBytes", held, "limitBytes", b.limit.Bytes)
	if w != nil {
		w.expireNow()
	}
}

// sizeOf is an object's encoded size: its protobuf size when it has one,
// else what the store's codec writes.
func (b *boundedHistory) sizeOf(obj runtime.Object) int64 {
	if p, ok := obj.(interface{ Size() int }); ok {
		return int64(p.Size())
	}
	var n countingWriter
	if err := b.codec.Encode(obj, &n); err != nil {
		return 0
	}
	return int64(n)
}

type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

var _ io.Writer = new(countingWriter)

// historyWatch passes the etcd watch through, accounting each event, and
// can be ended with the 410 that makes the cache's reflector relist.
type historyWatch struct {
	inner      watch.Interface
	out        chan watch.Event
	stop       chan struct{}
	stopOnce   sync.Once
	expire     chan struct{}
	expireOnce sync.Once
}

func (w *historyWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *historyWatch) Stop() { w.stopOnce.Do(func() { close(w.stop) }) }

func (w *historyWatch) expireNow() { w.expireOnce.Do(func() { close(w.expire) }) }

func (w *historyWatch) run(observe func(watch.Event), slim func(runtime.Object) runtime.Object) {
	defer close(w.out)
	defer w.inner.Stop()
	in := w.inner.ResultChan()
	for {
		select {
		case <-w.stop:
			return
		case <-w.expire:
			gone := apierrors.NewResourceExpired("the watch cache's history was released; relist").ErrStatus
			select {
			case w.out <- watch.Event{Type: watch.Error, Object: &gone}:
			case <-w.stop:
			}
			return
		case ev, ok := <-in:
			if !ok {
				return
			}
			observe(ev)
			if ev.Type == watch.Deleted {
				ev.Object = slim(ev.Object)
			}
			select {
			case w.out <- ev:
			case <-w.stop:
				return
			}
		}
	}
}
