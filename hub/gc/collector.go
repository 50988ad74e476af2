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
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/controller"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

// Store is what the collector needs of a built-in resource's storage.
type Store interface {
	wstorage.ListWatcher
	rest.Getter
	rest.Updater
	rest.GracefulDeleter
}

// Resource is one built-in kind the collector tracks.
type Resource struct {
	Kind       schema.GroupKind
	Namespaced bool
	Store      Store
	New        func() runtime.Object
}

// objKey names an object in the graph. Every key carries the logical
// cluster: uids are unique in practice, but the graph must not depend on
// it, so an owner reference can only ever resolve within its dependent's
// own cluster.
type objKey struct {
	cluster cluster.ID
	uid     types.UID
}

// Collector deletes dependents of deleted owners in every workspace.
type Collector struct {
	queue workqueue.TypedRateLimitingInterface[objKey]

	tenantOf controller.TenantOfCluster // charges work to tenants; nil: one tenant

	static []*monitor // built-in kinds, fixed at New
	crds   *crdMonitors

	kmu    sync.RWMutex // guards byKind
	byKind map[schema.GroupKind]*monitor

	mu         sync.RWMutex // guards the fields below
	nodes      map[objKey]*node
	dependents map[objKey]map[objKey]bool
}

// New returns a collector over the given built-in resources. Nothing runs
// until Run. Custom resources are added with WatchCustomResources.
//
// Its queue takes turns between tenants (tenantOf of each object's
// cluster): one tenant's thousands of objects whose owners are gone wait
// behind each other, and another tenant's dependent is looked at after at
// most one of them (issue 24, B7).
func New(resources []*Resource, tenantOf controller.TenantOfCluster) (*Collector, error) {
	var byTenant func(objKey) string
	if tenantOf != nil {
		byTenant = func(k objKey) string { return tenantOf(k.cluster) }
	}
	c := &Collector{
		tenantOf:   tenantOf,
		byKind:     map[schema.GroupKind]*monitor{},
		nodes:      map[objKey]*node{},
		dependents: map[objKey]map[objKey]bool{},
		queue:      controller.NewFair(controller.FairConfig[objKey]{Name: "garbage-collector", TenantOf: byTenant}),
	}
	for _, r := range resources {
		m, err := c.newMonitor(r.Kind, r.Namespaced, registryStore{r.Store}, wstorage.WildcardListWatch(r.Store), r.New())
		if err != nil {
			return nil, err
		}
		c.static = append(c.static, m)
		c.byKind[r.Kind] = m
	}
	return c, nil
}

// HasSynced reports whether every built-in resource and the list of CRDs
// have been listed. Custom resource informers start later, one per CRD;
// owners wait for them before acting on their dependents (graphSynced).
func (c *Collector) HasSynced() bool {
	for _, m := range c.static {
		if !m.hasSynced() {
			return false
		}
	}
	return c.crds == nil || c.crds.hasSynced()
}

// Run collects until ctx is done.
func (c *Collector) Run(ctx context.Context, workers int) {
	for _, m := range c.static {
		go m.informer.RunWithContext(ctx)
	}
	if c.crds != nil {
		go c.crds.run(ctx)
	}
	if !cache.WaitForCacheSync(ctx.Done(), c.HasSynced) {
		c.queue.ShutDown()
		return
	}
	controller.Run(ctx, c.queue, workers, "garbage-collector", c.reconcile)
}

// observe records an object and queues what its change may affect.
func (c *Collector) observe(obj interface{}, m *monitor) {
	n, ok := nodeFrom(obj, m)
	if !ok {
		return
	}
	c.mu.Lock()
	if old := c.nodes[n.key()]; old != nil {
		c.unlinkLocked(old)
	}
	c.nodes[n.key()] = n
	for _, o := range n.owners {
		ok := objKey{cluster: n.cluster, uid: o.UID}
		if c.dependents[ok] == nil {
			c.dependents[ok] = map[objKey]bool{}
		}
		c.dependents[ok][n.key()] = true
	}
	c.mu.Unlock()
	// Its owners may be gone, or it is an owner being deleted.
	if len(n.owners) > 0 || n.deleting {
		c.queue.Add(n.key())
	}
}

// forget drops a deleted object and queues its dependents (their owner is
// gone) and owners (a foreground deletion may be waiting for it).
func (c *Collector) forget(obj interface{}, m *monitor) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	n, ok := nodeFrom(obj, m)
	if !ok {
		return
	}
	c.forgetNode(n)
}

func (c *Collector) forgetNode(n *node) {
	c.mu.Lock()
	if old := c.nodes[n.key()]; old != nil {
		c.unlinkLocked(old)
		delete(c.nodes, n.key())
	}
	deps := make([]objKey, 0, len(c.dependents[n.key()]))
	for d := range c.dependents[n.key()] {
		deps = append(deps, d)
	}
	c.mu.Unlock()
	for _, d := range deps {
		c.queue.Add(d)
	}
	for _, o := range n.owners {
		c.queue.Add(objKey{cluster: n.cluster, uid: o.UID})
	}
}

func (c *Collector) unlinkLocked(n *node) {
	for _, o := range n.owners {
		ok := objKey{cluster: n.cluster, uid: o.UID}
		if set := c.dependents[ok]; set != nil {
			delete(set, n.key())
			if len(set) == 0 {
				delete(c.dependents, ok)
			}
		}
	}
}

// reconcile processes one object; a foreground deletion still waiting for
// blocking dependents is looked at again a second later.
func (c *Collector) reconcile(ctx context.Context, k objKey) error {
	requeue, err := c.process(ctx, k)
	if err == nil && requeue {
		c.queue.AddAfter(k, time.Second)
	}
	return err
}

// snapshot returns a node and its dependents under the read lock.
// Dependents are keyed by the owner's cluster, so only objects of the same
// cluster are ever returned.
func (c *Collector) snapshot(k objKey) (*node, []*node) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := c.nodes[k]
	if n == nil {
		return nil, nil
	}
	var deps []*node
	for d := range c.dependents[k] {
		if dn := c.nodes[d]; dn != nil {
			deps = append(deps, dn)
		}
	}
	return n, deps
}

func (c *Collector) lookup(k objKey) *node {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.nodes[k]
}

// monitorOf returns the monitor of a kind, nil when the collector does not
// watch it.
func (c *Collector) monitorOf(gk schema.GroupKind) *monitor {
	c.kmu.RLock()
	defer c.kmu.RUnlock()
	return c.byKind[gk]
}

// requeueReferencing queues every object that names an owner of kind gk:
// a kind the collector just learnt may make their owners resolvable (or
// absent) for the first time.
func (c *Collector) requeueReferencing(gk schema.GroupKind) {
	var keys []objKey
	c.mu.RLock()
	for k, n := range c.nodes {
		for _, o := range n.owners {
			if gv, err := schema.ParseGroupVersion(o.APIVersion); err == nil && gv.Group == gk.Group && o.Kind == gk.Kind {
				keys = append(keys, k)
				break
			}
		}
	}
	c.mu.RUnlock()
	klog.V(4).InfoS("Requeueing dependents of a newly watched kind", "kind", gk, "count", len(keys))
	for _, k := range keys {
		c.queue.Add(k)
	}
}
