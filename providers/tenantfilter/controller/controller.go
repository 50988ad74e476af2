package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	capsulev1beta1 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta1"
	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
)

// Options tune the controller; the zero value is usable.
type Options struct {
	// Clock stamps condition transition times and drives the discovery
	// re-validation; nil means the real clock.
	Clock clock.WithTicker
	// Workers reconcile in parallel; 0 means 2.
	Workers int
	// Revalidate is how often every settings object is checked again
	// against discovery (a CRD installed later may make a rule valid);
	// 0 means 30s.
	Revalidate time.Duration
	// Resync is the informers' resync period; 0 means 10m.
	Resync time.Duration
}

// kind is what a queue key names.
type kind int

const (
	kindTenant kind = iota
	kindConfiguration
	kindGlobal
	kindProxySetting
)

func (k kind) String() string {
	return [...]string{"Tenant", "CapsuleConfiguration", "GlobalProxySettings", "ProxySetting"}[k]
}

type key struct {
	kind      kind
	namespace string
	name      string
}

// Controller holds the informers and the queue.
type Controller struct {
	opts      Options
	clock     clock.WithTicker
	dyn       dynamic.Interface
	disc      *discoveryCache
	nsLister  corelisters.NamespaceLister
	nsIndexer cache.Indexer
	tenants   cache.GenericLister
	configs   cache.GenericLister
	globals   cache.GenericLister
	proxySets cache.GenericLister
	psIndexer cache.Indexer
	queue     workqueue.TypedRateLimitingInterface[key]
}

// Run starts the controller and blocks until ctx ends. It returns an error
// if the clients cannot be built or the caches do not sync before ctx ends.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	if opts.Revalidate <= 0 {
		opts.Revalidate = 30 * time.Second
	}
	if opts.Resync <= 0 {
		opts.Resync = 10 * time.Minute
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("status controller: clientset: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("status controller: dynamic client: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("status controller: discovery client: %w", err)
	}
	c := &Controller{
		opts: opts, clock: opts.Clock, dyn: dyn,
		disc: newDiscoveryCache(dc, opts.Clock, opts.Revalidate/2),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[key](),
			workqueue.TypedRateLimitingQueueConfig[key]{Name: "tenant-filter-status", Clock: opts.Clock}),
	}
	defer c.queue.ShutDown()
	logger := klog.FromContext(ctx).WithName("tenant-filter-status")
	c.waitServed(ctx, dc, logger)
	if ctx.Err() != nil {
		return nil
	}

	kf := informers.NewSharedInformerFactory(cs, opts.Resync)
	nsInf := kf.Core().V1().Namespaces()
	c.nsLister = nsInf.Lister()
	if err := nsInf.Informer().AddIndexers(cache.Indexers{tenantIndex: indexByTenant}); err != nil {
		return fmt.Errorf("status controller: namespace index: %w", err)
	}
	c.nsIndexer = nsInf.Informer().GetIndexer()
	df := dynamicinformer.NewDynamicSharedInformerFactory(dyn, opts.Resync)
	tInf := df.ForResource(capsulev1beta2.TenantsGVR)
	cInf := df.ForResource(capsulev1beta2.CapsuleConfigurationsGVR)
	gInf := df.ForResource(capsulev1beta1.GlobalProxySettingsGVR)
	pInf := df.ForResource(capsulev1beta1.ProxySettingsGVR)
	c.tenants, c.configs, c.globals, c.proxySets = tInf.Lister(), cInf.Lister(), gInf.Lister(), pInf.Lister()
	c.psIndexer = pInf.Informer().GetIndexer()

	for _, h := range []struct {
		inf cache.SharedIndexInformer
		k   kind
	}{{tInf.Informer(), kindTenant}, {cInf.Informer(), kindConfiguration}, {gInf.Informer(), kindGlobal}, {pInf.Informer(), kindProxySetting}} {
		k := h.k
		if _, err := h.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { c.enqueueObj(k, o) },
			UpdateFunc: func(_, o any) { c.enqueueObj(k, o) },
			DeleteFunc: func(o any) { c.enqueueObj(k, o) },
		}); err != nil {
			return fmt.Errorf("status controller: handler: %w", err)
		}
	}
	if _, err := nsInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { c.namespaceChanged(nil, o) },
		UpdateFunc: c.namespaceChanged,
		DeleteFunc: func(o any) { c.namespaceChanged(o, nil) },
	}); err != nil {
		return fmt.Errorf("status controller: handler: %w", err)
	}

	kf.Start(ctx.Done())
	df.Start(ctx.Done())
	defer kf.Shutdown()
	defer df.Shutdown()
	logger.Info("Waiting for caches")
	if !cache.WaitForCacheSync(ctx.Done(), nsInf.Informer().HasSynced, tInf.Informer().HasSynced,
		cInf.Informer().HasSynced, gInf.Informer().HasSynced, pInf.Informer().HasSynced) {
		return fmt.Errorf("status controller: caches did not sync: %w", context.Cause(ctx))
	}
	logger.Info("Started", "workers", opts.Workers)
	for range opts.Workers {
		go wait.UntilWithContext(ctx, c.worker, time.Second)
	}
	// Discovery changes (a CRD installed or removed) do not show in any
	// informer; re-validate the settings objects periodically.
	t := c.clock.NewTicker(opts.Revalidate)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			c.enqueueAllSettings()
		}
	}
}

func (c *Controller) enqueueObj(k kind, o any) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	ns, name, err := cache.SplitMetaNamespaceKey(metaKey(o))
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	if k == kindTenant || k == kindConfiguration || k == kindGlobal {
		ns = ""
	}
	c.queue.Add(key{kind: k, namespace: ns, name: name})
}

func metaKey(o any) string {
	k, err := cache.MetaNamespaceKeyFunc(o)
	if err != nil {
		return ""
	}
	return k
}

// namespaceChanged requeues the tenants an old or new namespace names, and
// the ProxySettings inside it (their Ready message depends on the tenant).
func (c *Controller) namespaceChanged(oldObj, newObj any) {
	for _, o := range []any{oldObj, newObj} {
		if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		ns, ok := o.(*corev1.Namespace)
		if !ok {
			continue
		}
		for _, t := range namespaceTenants(ns) {
			c.queue.Add(key{kind: kindTenant, name: t})
		}
		objs, err := c.psIndexer.ByIndex(cache.NamespaceIndex, ns.Name)
		if err != nil {
			continue
		}
		for _, p := range objs {
			c.enqueueObj(kindProxySetting, p)
		}
	}
}

func (c *Controller) enqueueAllSettings() {
	for _, l := range []struct {
		lister cache.GenericLister
		k      kind
	}{{c.globals, kindGlobal}, {c.proxySets, kindProxySetting}} {
		objs, err := l.lister.List(everything())
		if err != nil {
			continue
		}
		for _, o := range objs {
			c.enqueueObj(l.k, o)
		}
	}
}

func (c *Controller) worker(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

func (c *Controller) processNext(ctx context.Context) bool {
	k, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(k)
	var err error
	switch k.kind {
	case kindTenant:
		err = c.syncTenant(ctx, k.name)
	case kindConfiguration:
		err = c.syncConfiguration(ctx, k.name)
	case kindGlobal:
		err = c.syncGlobal(ctx, k.name)
	case kindProxySetting:
		err = c.syncProxySetting(ctx, k.namespace, k.name)
	}
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Status sync failed, retrying", "kind", k.kind, "namespace", k.namespace, "name", k.name, "err", err)
		c.queue.AddRateLimited(k)
		return true
	}
	c.queue.Forget(k)
	return true
}

// waitServed waits until the four kinds are served: an informer on a
// resource that does not exist would never sync and would hold the others
// back. CRDs applied later (crds.Apply, or `crds | kubectl apply -f -`) are
// picked up without a restart.
func (c *Controller) waitServed(ctx context.Context, dc discovery.DiscoveryInterface, logger klog.Logger) {
	logged := false
	for {
		missing := missingResources(dc)
		if len(missing) == 0 {
			return
		}
		if !logged {
			logger.Info("Waiting for CRDs to be served", "missing", missing)
			logged = true
		}
		select {
		case <-ctx.Done():
			return
		case <-c.clock.After(2 * time.Second):
		}
	}
}

func missingResources(dc discovery.DiscoveryInterface) []string {
	var missing []string
	for _, gvr := range []schema.GroupVersionResource{capsulev1beta2.TenantsGVR, capsulev1beta2.CapsuleConfigurationsGVR,
		capsulev1beta1.GlobalProxySettingsGVR, capsulev1beta1.ProxySettingsGVR} {
		found := false
		if l, err := dc.ServerResourcesForGroupVersion(gvr.GroupVersion().String()); err == nil {
			for _, r := range l.APIResources {
				found = found || r.Name == gvr.Resource
			}
		}
		if !found {
			missing = append(missing, gvr.Resource+"."+gvr.Group+"/"+gvr.Version)
		}
	}
	return missing
}
