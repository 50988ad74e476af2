package controller

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/wharfhub/wharf/hub/cluster"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

// Keyed couples an informer to a work queue: every added or updated object
// that passes the filter is queued by its informer key.
type Keyed struct {
	Name     string
	Informer cache.SharedIndexInformer
	Queue    workqueue.TypedRateLimitingInterface[string]
}

// NewKeyed wires inf to a new fair, rate-limited queue (NewFair) whose
// keys are charged to tenantOf's answer (nil: one tenant). A nil filter
// queues every object.
func NewKeyed(name string, inf cache.SharedIndexInformer, filter func(obj interface{}) bool, tenantOf func(string) string) (*Keyed, error) {
	k := &Keyed{
		Name: name, Informer: inf,
		Queue: NewFair(FairConfig[string]{Name: name, TenantOf: tenantOf}),
	}
	enqueue := func(obj interface{}) {
		if filter != nil && !filter(obj) {
			return
		}
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			k.Queue.Add(key)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj interface{}) { enqueue(obj) },
	}); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return k, nil
}

// HasSynced reports whether the informer has listed everything.
func (k *Keyed) HasSynced() bool { return k.Informer.HasSynced() }

// Run starts the informer and, once it has synced, drains the queue with
// reconcile until ctx is done.
func (k *Keyed) Run(ctx context.Context, workers int, reconcile func(context.Context, string) error) {
	go k.Informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), k.Informer.HasSynced) {
		k.Queue.ShutDown()
		return
	}
	Run(ctx, k.Queue, workers, k.Name, reconcile)
}

// ClusterKeyTenant names the tenant of an informer key of
// storage.NewClusterInformer ("<cluster>/<namespace>/<name>" or
// "<cluster>//<name>") by its cluster.
func ClusterKeyTenant(t TenantOfCluster) func(string) string {
	if t == nil {
		return nil
	}
	return func(key string) string {
		id, _, _ := strings.Cut(key, "/")
		return t(cluster.ID(id))
	}
}

// StoredClusterTenant names the tenant of a key of an informer over a
// hub-wide resource (one whose objects are not keyed by cluster, such as
// CustomResourceDefinitions) by the cluster the hub's storage recorded on
// the object (the wharf.dev/cluster annotation, which the storage
// decorator overwrites on every write, so no client chooses it). The
// lookup is in store's memory. A key whose object is not (or no longer)
// in store, or carries no cluster, is charged to the hub ("").
func StoredClusterTenant(store cache.Store, tenantOf TenantOfCluster) func(string) string {
	if tenantOf == nil {
		return nil
	}
	return func(key string) string {
		obj, ok, _ := store.GetByKey(key)
		if !ok {
			return ""
		}
		m, err := meta.Accessor(obj)
		if err != nil || m.GetAnnotations()[wstorage.ClusterAnnotation] == "" {
			return ""
		}
		return tenantOf(cluster.ID(m.GetAnnotations()[wstorage.ClusterAnnotation]))
	}
}
