package core

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/providers/tenantfilter/rules"
)

// informerCache implements Cache with one dynamic informer per resource,
// started on first use with the provider's own credential. Objects in its
// listers are *unstructured.Unstructured; the grants engine converts them.
// With --disable-caching it hands out live listers instead.
type informerCache struct {
	ctx     context.Context
	dyn     dynamic.Interface
	disco   *liveDiscovery
	live    bool          // --disable-caching
	timeout time.Duration // bound for a live read

	mu        sync.Mutex // guards informers and indexers below
	informers map[schema.GroupVersionResource]cache.SharedIndexInformer
	// indexers are registered before an informer starts (informers refuse
	// indexers added after they run).
	indexers map[schema.GroupVersionResource]cache.Indexers
	handlers map[schema.GroupVersionResource][]cache.ResourceEventHandler
	resync   map[schema.GroupVersionResource]time.Duration
}

func newInformerCache(ctx context.Context, dyn dynamic.Interface, disco *liveDiscovery, live bool) *informerCache {
	return &informerCache{
		ctx: ctx, dyn: dyn, disco: disco, live: live, timeout: 30 * time.Second,
		informers: map[schema.GroupVersionResource]cache.SharedIndexInformer{},
		indexers:  map[schema.GroupVersionResource]cache.Indexers{},
		handlers:  map[schema.GroupVersionResource][]cache.ResourceEventHandler{},
		resync:    map[schema.GroupVersionResource]time.Duration{},
	}
}

// configure registers indexers, event handlers and a resync period for a
// resource; call it before the resource's informer first starts.
func (c *informerCache) configure(gvr schema.GroupVersionResource, idx cache.Indexers, h cache.ResourceEventHandler, resync time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if idx != nil {
		if c.indexers[gvr] == nil {
			c.indexers[gvr] = cache.Indexers{}
		}
		for k, v := range idx {
			c.indexers[gvr][k] = v
		}
	}
	if h != nil {
		c.handlers[gvr] = append(c.handlers[gvr], h)
	}
	if resync > 0 {
		c.resync[gvr] = resync
	}
}

// informer returns the informer for gvr, starting it (tied to the core's
// context) on first use.
func (c *informerCache) informer(gvr schema.GroupVersionResource) cache.SharedIndexInformer {
	c.mu.Lock()
	defer c.mu.Unlock()
	if inf, ok := c.informers[gvr]; ok {
		return inf
	}
	idx := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	for k, v := range c.indexers[gvr] {
		idx[k] = v
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(c.dyn, gvr, "", c.resync[gvr], idx, nil).Informer()
	for _, h := range c.handlers[gvr] {
		if _, err := inf.AddEventHandler(h); err != nil {
			klog.ErrorS(err, "tenant filter: add event handler", "resource", gvr.String())
		}
	}
	if err := inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		klog.V(2).InfoS("tenant filter: watch error", "resource", gvr.String(), "err", err)
	}); err != nil {
		klog.ErrorS(err, "tenant filter: watch error handler", "resource", gvr.String())
	}
	c.informers[gvr] = inf
	go inf.Run(c.ctx.Done())
	klog.V(2).InfoS("tenant filter: informer started", "resource", gvr.String())
	return inf
}

// started returns the informer for gvr if it runs already.
func (c *informerCache) started(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	inf, ok := c.informers[gvr]
	return inf, ok
}

// Lister implements Cache.
func (c *informerCache) Lister(ctx context.Context, gvr schema.GroupVersionResource) (cache.GenericLister, error) {
	info, ok := c.Resource(gvr.Group, gvr.Version, gvr.Resource)
	if !ok {
		return nil, fmt.Errorf("resource %s is not served by the downstream", gvr.String())
	}
	if !hasVerbs(info.Verbs, "list", "watch") {
		return nil, fmt.Errorf("resource %s cannot be listed and watched", gvr.String())
	}
	if c.live {
		return &liveLister{dyn: c.dyn, gvr: info.GVR, timeout: c.timeout}, nil
	}
	inf := c.informer(info.GVR)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("cache for %s not synced: %w", gvr.String(), ctx.Err())
	}
	return cache.NewGenericLister(inf.GetIndexer(), info.GVR.GroupResource()), nil
}

// Resource implements Cache.
func (c *informerCache) Resource(group, version, resource string) (ResourceInfo, bool) {
	return c.disco.lookup(group, version, resource)
}

// ClusterScoped implements Cache.
func (c *informerCache) ClusterScoped() []ResourceInfo { return c.disco.clusterScoped() }

// Discovered lists every discovered resource (see Cache).
func (c *informerCache) Discovered() []rules.Resource { return c.disco.discovered() }

// synced reports whether the informer for gvr exists and has synced.
func (c *informerCache) synced(gvr schema.GroupVersionResource) bool {
	inf, ok := c.started(gvr)
	return ok && inf.HasSynced()
}

func hasVerbs(have []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			if h == w || h == "*" {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
