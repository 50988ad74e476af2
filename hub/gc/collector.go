package gc

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/wharfhub/wharf/hub/controller"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

// Store is what the collector needs of a resource's storage.
type Store interface {
	wstorage.ListWatcher
	rest.Getter
	rest.Updater
	rest.GracefulDeleter
}

// Resource is one kind the collector tracks.
type Resource struct {
	Kind       schema.GroupKind
	Namespaced bool
	Store      Store
	New        func() runtime.Object
}

// Collector deletes dependents of deleted owners in every workspace.
type Collector struct {
	byKind    map[schema.GroupKind]*Resource
	informers []cache.SharedIndexInformer
	synced    []cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[types.UID]

	mu         sync.RWMutex // guards the fields below
	nodes      map[types.UID]*node
	dependents map[types.UID]map[types.UID]bool
}

// New returns a collector over the given resources. Nothing runs until Run.
func New(resources []*Resource) (*Collector, error) {
	c := &Collector{
		byKind:     map[schema.GroupKind]*Resource{},
		nodes:      map[types.UID]*node{},
		dependents: map[types.UID]map[types.UID]bool{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.UID](),
			workqueue.TypedRateLimitingQueueConfig[types.UID]{Name: "garbage-collector"}),
	}
	for _, r := range resources {
		r := r
		c.byKind[r.Kind] = r
		inf, err := wstorage.NewClusterInformer(r.Store, r.New(), 0)
		if err != nil {
			return nil, err
		}
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj interface{}) { c.observe(obj, r) },
			UpdateFunc: func(_, obj interface{}) { c.observe(obj, r) },
			DeleteFunc: func(obj interface{}) {
				if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = t.Obj
				}
				c.forget(obj, r)
			},
		})
		if err != nil {
			return nil, err
		}
		c.informers = append(c.informers, inf)
		c.synced = append(c.synced, reg.HasSynced)
	}
	return c, nil
}

// HasSynced reports whether every watched resource has been listed.
func (c *Collector) HasSynced() bool {
	for _, s := range c.synced {
		if !s() {
			return false
		}
	}
	return true
}

// Run collects until ctx is done.
func (c *Collector) Run(ctx context.Context, workers int) {
	for _, inf := range c.informers {
		go inf.RunWithContext(ctx)
	}
	if !cache.WaitForCacheSync(ctx.Done(), c.HasSynced) {
		c.queue.ShutDown()
		return
	}
	controller.Run(ctx, c.queue, workers, "garbage-collector", c.reconcile)
}

// observe records an object and queues what its change may affect.
func (c *Collector) observe(obj interface{}, r *Resource) {
	n, ok := nodeFrom(obj, r)
	if !ok {
		return
	}
	c.mu.Lock()
	if old := c.nodes[n.uid]; old != nil {
		c.unlinkLocked(old)
	}
	c.nodes[n.uid] = n
	for _, o := range n.owners {
		if c.dependents[o.UID] == nil {
			c.dependents[o.UID] = map[types.UID]bool{}
		}
		c.dependents[o.UID][n.uid] = true
	}
	c.mu.Unlock()
	// Its owners may be gone, or it is an owner being deleted.
	if len(n.owners) > 0 || n.deleting {
		c.queue.Add(n.uid)
	}
}

// forget drops a deleted object and queues its dependents (their owner is
// gone) and owners (a foreground deletion may be waiting for it).
func (c *Collector) forget(obj interface{}, r *Resource) {
	n, ok := nodeFrom(obj, r)
	if !ok {
		return
	}
	c.mu.Lock()
	if old := c.nodes[n.uid]; old != nil {
		c.unlinkLocked(old)
		delete(c.nodes, n.uid)
	}
	deps := make([]types.UID, 0, len(c.dependents[n.uid]))
	for d := range c.dependents[n.uid] {
		deps = append(deps, d)
	}
	c.mu.Unlock()
	for _, d := range deps {
		c.queue.Add(d)
	}
	for _, o := range n.owners {
		c.queue.Add(o.UID)
	}
}

func (c *Collector) unlinkLocked(n *node) {
	for _, o := range n.owners {
		if set := c.dependents[o.UID]; set != nil {
			delete(set, n.uid)
			if len(set) == 0 {
				delete(c.dependents, o.UID)
			}
		}
	}
}

// reconcile processes one object; a foreground deletion still waiting for
// blocking dependents is looked at again a second later.
func (c *Collector) reconcile(ctx context.Context, uid types.UID) error {
	requeue, err := c.process(ctx, uid)
	if err == nil && requeue {
		c.queue.AddAfter(uid, time.Second)
	}
	return err
}

// snapshot returns a node and its dependents under the read lock.
func (c *Collector) snapshot(uid types.UID) (*node, []*node) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := c.nodes[uid]
	if n == nil {
		return nil, nil
	}
	var deps []*node
	for d := range c.dependents[uid] {
		if dn := c.nodes[d]; dn != nil && dn.cluster == n.cluster {
			deps = append(deps, dn)
		}
	}
	return n, deps
}

func (c *Collector) lookup(uid types.UID) *node {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.nodes[uid]
}
