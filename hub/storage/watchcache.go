package storage

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	genericoptions "k8s.io/apiserver/pkg/server/options"
)

// WatchCache says which resources are served from a watch cache. When
// the hub builds a resource's storage itself (RESTOptionsGetter's
// RetryWrites), it cannot keep the decorator upstream chose, so it makes
// the same decision explicitly, by upstream's rule
// (StorageFactoryRestOptionsFactory.GetRESTOptions in
// k8s.io/apiserver/pkg/server/options, which the apiextensions server's
// getter for custom resources uses too): every resource is cached when
// --watch-cache is on, except those whose --watch-cache-sizes entry is 0.
// A positive size only means "cached" (the cache is sized dynamically;
// upstream warns and drops the size); a negative one is refused.
type WatchCache struct {
	Enabled bool
	// Off lists the resources with a size of 0.
	Off map[schema.GroupResource]bool
	// History bounds the deleted and replaced objects each cache keeps
	// in its event history (history.go); its zero value keeps upstream's
	// unbounded behaviour.
	History HistoryLimit
}

// WatchCacheOf reads the decision from the etcd options the hub was
// started with.
func WatchCacheOf(o *genericoptions.EtcdOptions) (WatchCache, error) {
	w := WatchCache{Enabled: o.EnableWatchCache}
	if !w.Enabled {
		return w, nil
	}
	sizes, err := genericoptions.ParseWatchCacheSizes(o.WatchCacheSizes)
	if err != nil {
		return WatchCache{}, fmt.Errorf("--watch-cache-sizes: %w", err)
	}
	for gr, size := range sizes {
		if size <= 0 {
			if w.Off == nil {
				w.Off = map[schema.GroupResource]bool{}
			}
			w.Off[gr] = true
		}
	}
	return w, nil
}

// Cached reports whether gr is served from a watch cache.
func (w WatchCache) Cached(gr schema.GroupResource) bool { return w.Enabled && !w.Off[gr] }
