package gc

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	wstorage "github.com/wharfhub/wharf/hub/storage"
)

// objectStore reads and writes one resource's objects in the logical
// cluster and namespace of the context (see scoped). Every write is
// guarded by the object's uid, so an object recreated under the same name
// is never touched on behalf of its predecessor.
type objectStore interface {
	get(ctx context.Context, name string) (metav1.Object, error)
	update(ctx context.Context, name string, uid types.UID, mutate func(metav1.Object)) error
	delete(ctx context.Context, name string, uid types.UID, policy metav1.DeletionPropagation) error
}

// monitor watches one kind in every logical cluster and feeds the graph.
type monitor struct {
	kind       schema.GroupKind
	namespaced bool
	store      objectStore
	informer   cache.SharedIndexInformer
	synced     cache.InformerSynced
	started    time.Time // for custom resources: when the informer started
}

func (m *monitor) hasSynced() bool { return m.synced != nil && m.synced() }

// newMonitor builds the informer of a kind over a wildcard list/watch.
// Objects are keyed by cluster (wstorage.KeyByCluster), so same-named
// objects of two workspaces never overwrite each other.
func (c *Collector) newMonitor(gk schema.GroupKind, namespaced bool, store objectStore, lw cache.ListerWatcher, example runtime.Object) (*monitor, error) {
	m := &monitor{kind: gk, namespaced: namespaced, store: store}
	inf := cache.NewSharedIndexInformer(lw, example, 0, cache.Indexers{})
	if err := inf.SetTransform(wstorage.KeyByCluster); err != nil {
		return nil, fmt.Errorf("informer transform for %s: %w", gk, err)
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { c.observe(obj, m) },
		UpdateFunc: func(_, obj interface{}) { c.observe(obj, m) },
		DeleteFunc: func(obj interface{}) { c.forget(obj, m) },
	})
	if err != nil {
		return nil, fmt.Errorf("event handler for %s: %w", gk, err)
	}
	m.informer, m.synced = inf, reg.HasSynced
	return m, nil
}

// forgetAll drops every object of a monitor that stopped (its CRD is gone
// or changed): owners in foreground deletion must not wait for dependents
// the collector can no longer see, and dependents of its objects are
// looked at again.
func (c *Collector) forgetAll(m *monitor) {
	var gone []*node
	c.mu.RLock()
	for _, n := range c.nodes {
		if n.mon == m {
			gone = append(gone, n)
		}
	}
	c.mu.RUnlock()
	for _, n := range gone {
		c.forgetNode(n)
	}
}
