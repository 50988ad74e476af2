package resourceproxy

import (
	"context"
	"fmt"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/sdk/clusters"
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
	cfg      *rest.Config // the provider's own identity
	routes   *Routes
	targets  *Targets
	informer *clusters.Informer
	queue    workqueue.TypedRateLimitingInterface[string]

	mu sync.Mutex
	// clients is one dynamic client per client cluster.
	clients map[string]dynamic.Interface
}

// NewController watches ResourceProxies across the workspaces that
// enabled the provider.
func NewController(cfg *rest.Config, routes *Routes, targets *Targets) (*Controller, error) {
	wild, err := clusters.Wildcard(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(wild)
	if err != nil {
		return nil, fmt.Errorf("resourceproxy client: %w", err)
	}
	rps := dyn.Resource(GVR)
	c := &Controller{cfg: cfg, routes: routes, targets: targets, clients: map[string]dynamic.Interface{},
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	enqueue := func(obj any) {
		if cl := clusters.ClusterOf(obj); cl != "" {
			c.queue.Add(cl)
		}
	}
	c.informer, err = clusters.NewInformer(clusters.InformerOptions{
		ListerWatcher: &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return rps.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return rps.Watch(ctx, o)
			},
		},
		ObjectType: &unstructured.Unstructured{},
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

func (c *Controller) client(cluster string) (dynamic.Interface, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := c.clients[cluster]; d != nil {
		return d, nil
	}
	cfg, err := clusters.ForCluster(c.cfg, cluster)
	if err != nil {
		return nil, err
	}
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("workspace client: %w", err)
	}
	c.clients[cluster] = d
	return d, nil
}
