package resourceproxy

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/sdk/clusters"
	"github.com/wharfhub/wharf/sdk/fairqueue"
)

// Finalizer keeps a ResourceProxy until its APIServices are gone, so a
// deletion while the provider is down still removes the routing.
const Finalizer = "proxy.wharf.dev/apiservices"

// resync re-reads every cluster's proxies (Secret access can change
// without an event the provider sees).
const resync = 30 * time.Second

// APIServiceGVR is apiregistration.k8s.io/v1 apiservices.
var APIServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// Controller keeps, per client workspace, the APIServices and the routing
// table in step with the ResourceProxies, and writes their status. It is
// keyed by cluster: conflicts are decided among all proxies of a cluster.
type Controller struct {
	routes   *Routes
	targets  *Targets
	informer *clusters.Informer
	queue    workqueue.TypedRateLimitingInterface[string]
	// clients is one dynamic client per client cluster, on the
	// provider's own identity.
	clients *clusters.Clients[*dynamic.DynamicClient]
}

// NewController watches ResourceProxies across the workspaces that
// enabled the provider.
//
// Its queue takes turns between tenants (sdk/fairqueue), so one tenant's
// hundreds of workspaces of proxies, each requeued every resync, do not
// hold up another's (issue 24, B-D).
func NewController(cfg *rest.Config, routes *Routes, targets *Targets) (*Controller, error) {
	c := &Controller{routes: routes, targets: targets, clients: clusters.NewClients(cfg, dynamic.NewForConfig)}
	c.queue = fairqueue.New(fairqueue.Config[string]{
		Name:     "resource-proxy",
		TenantOf: routes.tenantOf,
		// A cluster dropped over the bound lost its place in the resync
		// chain (AddAfter below): add back every cluster of the tenant
		// that has proxies, or routes left to remove.
		Resync: func(tenant string) {
			for _, cl := range append(c.informer.Lister().Clusters(), routes.clusters()...) {
				if routes.tenantOf(cl) == tenant {
					c.queue.Add(cl)
				}
			}
		},
	})
	enqueue := func(obj any) {
		if cl := clusters.ClusterOf(obj); cl != "" {
			c.queue.Add(cl)
		}
	}
	// A target whose addresses the policy starts (or stops) refusing is
	// reported at once, not at the next resync.
	targets.SetOnRefusal(func(cluster string) { c.queue.Add(cluster) })
	var err error
	c.informer, err = clusters.NewResourceInformer(cfg, GVR, clusters.InformerOptions{
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    enqueue,
			UpdateFunc: func(_, obj any) { enqueue(obj) },
			DeleteFunc: func(obj any) {
				if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = d.Obj
				}
				enqueue(obj)
			},
		},
	})
	return c, err
}

// Run serves until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	defer c.queue.ShutDown()
	go c.informer.Run(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), c.informer.HasSynced) {
		return
	}
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	for c.next(ctx) {
	}
}

func (c *Controller) next(ctx context.Context) bool {
	cluster, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(cluster)
	if err := c.reconcile(ctx, cluster); err != nil {
		if apierrors.IsConflict(err) {
			// A stale cache read; the retry sees the new object.
			klog.FromContext(ctx).V(4).Info("resource proxy: reconcile conflict, retrying", "cluster", cluster, "err", err.Error())
		} else {
			klog.FromContext(ctx).Error(err, "resource proxy: reconcile", "cluster", cluster)
		}
		c.queue.AddRateLimited(cluster)
		return true
	}
	c.queue.Forget(cluster)
	c.queue.AddAfter(cluster, resync)
	return true
}
