package workspaces

import (
	"context"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/utils/lru"

	clientv3 "go.etcd.io/etcd/client/v3"
	compbasemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/cluster"
)

// A deletion held by its content (finalizers of its objects or of child
// Workspaces) is looked at again with exponential backoff per key, from
// heldBackoffBase doubling to heldBackoffMax, and at the latest when the
// grace period ends. Before, every held deletion was looked at every two
// seconds, each look deleting and listing its whole content through the
// API: a few hundred held deletions of one tenant kept the hub-wide queue
// full, and another tenant's deletion waited behind them (issue 24, B4).
// A delete in the held cluster brings the next look forward (wakes), so
// content that does go is noticed at once.
const (
	heldBackoffBase = time.Second
	heldBackoffMax  = 5 * time.Minute
)

var (
	heldRequeues = compbasemetrics.NewCounter(&compbasemetrics.CounterOpts{
		Name:           "wharf_workspace_deletion_held_requeues_total",
		Help:           "Workspace deletions found held by remaining content and requeued with backoff.",
		StabilityLevel: compbasemetrics.ALPHA,
	})
	heldWakes = compbasemetrics.NewCounter(&compbasemetrics.CounterOpts{
		Name:           "wharf_workspace_deletion_wakes_total",
		Help:           "Held workspace deletions queued early because something in the held workspace was deleted.",
		StabilityLevel: compbasemetrics.ALPHA,
	})
)

func init() {
	legacyregistry.MustRegister(heldRequeues, heldWakes)
}

// Timer-driven looks at one tenant's held deletions are paced to
// heldLooksPerSecond (burst heldLooksBurst) on top of each key's backoff.
// A look lists the workspace's every resource through the API as the hub,
// outside every tenant limit: 250 held deletions just created, each at
// the start of its backoff, cost 10-28 looks a second, some 200-500
// internal requests, and another tenant's requests waited for the CPU
// (issue 24, B4: the victim's p99 3.1x). Wakes (content deleted) are not
// paced: they are progress, and bring a look forward at once.
const (
	heldLooksPerSecond = 1
	heldLooksBurst     = 10
	// heldPaceTenants bounds the tenants whose pace is remembered.
	heldPaceTenants = 10000
)

// requeueHeld returns when to look at a held deletion again: the key's
// next backoff step or its tenant's next paced look, whichever is later,
// but no later than the end of the grace period.
func (c *Controller) requeueHeld(key string, left time.Duration) time.Duration {
	heldRequeues.Inc()
	return min(c.paceHeld(key, c.held.When(key)), left)
}

// paceHeld returns after when key's tenant may look at a held deletion
// again, at least after.
func (c *Controller) paceHeld(key string, after time.Duration) time.Duration {
	if c.tenantOfKey == nil || c.clock == nil {
		return after
	}
	tenant := c.tenantOfKey(key)
	c.paceMu.Lock()
	defer c.paceMu.Unlock()
	if c.paces == nil {
		c.paces = lru.New(heldPaceTenants)
	}
	var lim *rate.Limiter
	if v, ok := c.paces.Get(tenant); ok {
		lim = v.(*rate.Limiter)
	} else {
		lim = rate.NewLimiter(heldLooksPerSecond, heldLooksBurst)
		c.paces.Add(tenant, lim)
	}
	// The token is taken at the backoff's end, so a key whose backoff is
	// long does not use up its tenant's near ones.
	now := c.clock.Now()
	at := now.Add(after)
	r := lim.ReserveN(at, 1)
	if !r.OK() {
		return after
	}
	return after + r.DelayFrom(at)
}

// keyOf is the informer key of the Workspace name stored in parent (see
// storage.KeyByCluster).
func keyOf(parent cluster.ID, name string) string {
	return string(parent) + "//" + name
}

// wakes maps the logical clusters of held deletions to their queue keys.
type wakes struct {
	mu   sync.RWMutex
	keys map[cluster.ID]string
}

func newWakes() *wakes { return &wakes{keys: map[cluster.ID]string{}} }

func (w *wakes) hold(id cluster.ID, key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.keys[id] = key
}

func (w *wakes) release(id cluster.ID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.keys, id)
}

// keyFor returns the key of the held deletion whose cluster an etcd key
// belongs to. Stored keys carry the cluster as one path segment
// (/<prefix>/<group>/<resource>/<cluster>/...).
func (w *wakes) keyFor(etcdKey string) (string, bool) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if len(w.keys) == 0 {
		return "", false
	}
	for _, seg := range strings.Split(etcdKey, "/") {
		if k, ok := w.keys[cluster.ID(seg)]; ok {
			return k, true
		}
	}
	return "", false
}

// watchDeletes follows deletes in the store (etcd filters out puts) and
// queues the held deletion whose cluster lost an object. The queue
// deduplicates, so a thousand deletes in one cluster cost one look, and it
// is charged to that deletion's tenant.
func (c *Controller) watchDeletes(ctx context.Context) {
	if c.etcd == nil {
		<-ctx.Done()
		return
	}
	prefix := strings.TrimSuffix(c.etcdPrefix, "/") + "/"
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range c.etcd.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithFilterPut()) {
		if err := wr.Err(); err != nil {
			if ctx.Err() == nil {
				klog.FromContext(ctx).V(2).Info("Watch of deletes for held workspace deletions ended; restarting", "err", err)
			}
			return
		}
		for _, ev := range wr.Events {
			if key, ok := c.wakes.keyFor(string(ev.Kv.Key)); ok {
				heldWakes.Inc()
				c.keyed.Queue.Add(key)
			}
		}
	}
}
