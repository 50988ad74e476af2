package storage

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// Scope says how a resource's objects are partitioned.
type Scope int

const (
	// Scoped resources live in exactly one logical cluster: the request's.
	Scoped Scope = iota
	// GlobalScope resources are hub-wide (CustomResourceDefinitions): every
	// workspace sees the same objects, stored under cluster.Global.
	GlobalScope
)

// RESTOptionsGetter wraps an upstream RESTOptionsGetter so that every
// resource it configures is partitioned by logical cluster.
type RESTOptionsGetter struct {
	// Delegate produces the upstream options: storage config, codec and the
	// (usually watch-cached) decorator that this one wraps.
	Delegate generic.RESTOptionsGetter
	// Global lists the resources stored hub-wide instead of per cluster.
	Global map[schema.GroupResource]bool
	// RetryWrites builds the etcd3 stores on a client that retries writes
	// cut off by the loss of an etcd member or leader (raw.go), timed by
	// Clock (the real one when nil). The Delegate's decorator is then
	// replaced, not wrapped: WatchCache says which resources get a watch
	// cache in front of that store, as the Delegate would have decided.
	RetryWrites bool
	WatchCache  WatchCache
	Clock       clock.Clock
	// Wrap, when set, wraps each per-workspace resource's store inside
	// the cluster keying, where objects carry their cluster (hub/quota
	// counts writes there).
	Wrap func(storage.Interface, *storagebackend.ConfigForResource) storage.Interface
	// Sizes, when set, learns the stored size of every per-workspace
	// value written and read (sizes.go).
	Sizes ObjectSizes
}

var _ generic.RESTOptionsGetter = RESTOptionsGetter{}

// GetRESTOptions implements generic.RESTOptionsGetter.
func (g RESTOptionsGetter) GetRESTOptions(gr schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	opts, err := g.Delegate.GetRESTOptions(gr, example)
	if err != nil {
		return opts, err
	}
	scope := Scoped
	if g.Global[gr] {
		scope = GlobalScope
	}
	opts.ResourcePrefix = ResourcePrefix(gr.Group, gr.Resource)
	if g.RetryWrites {
		clk := g.Clock
		if clk == nil {
			clk = clock.RealClock{}
		}
		opts.Decorator = retryingStorage(g.WatchCache.Cached(gr), g.WatchCache.History, clk)
	}
	opts.Decorator = decorator(opts.Decorator, scope, g.Wrap, g.Sizes)
	return opts, nil
}

// Decorator wraps inner (typically the watch-cache decorator) so that keys
// carry the logical cluster and calls without one fail.
func Decorator(inner generic.StorageDecorator, scope Scope) generic.StorageDecorator {
	return DecoratorWith(inner, scope, nil)
}

// DecoratorWith is Decorator with wrap (when not nil) around the inner
// store of every Scoped resource.
func DecoratorWith(inner generic.StorageDecorator, scope Scope, wrap func(storage.Interface, *storagebackend.ConfigForResource) storage.Interface) generic.StorageDecorator {
	return decorator(inner, scope, wrap, nil)
}

func decorator(inner generic.StorageDecorator, scope Scope, wrap func(storage.Interface, *storagebackend.ConfigForResource) storage.Interface,
	sizes ObjectSizes) generic.StorageDecorator {
	if inner == nil {
		inner = generic.UndecoratedStorage
	}
	disableWatchList()
	return func(
		config *storagebackend.ConfigForResource,
		resourcePrefix string,
		keyFunc func(obj runtime.Object) (string, error),
		newFunc func() runtime.Object,
		newListFunc func() runtime.Object,
		getAttrsFunc storage.AttrFunc,
		trigger storage.IndexerFuncs,
		indexers *cache.Indexers,
	) (storage.Interface, factory.DestroyFunc, error) {
		// The watch cache below us sees objects of every cluster; it must key
		// them exactly as etcd does, and the annotation is how it learns the
		// cluster of an object it decoded from an event. A quarantine
		// stand-in (guard.go) names its etcd key itself: the guard verified
		// every other object's computed key against the key it was read
		// from, so this function cannot fail on stored data.
		clusterKeyFunc := func(obj runtime.Object) (string, error) {
			if k, ok := quarantinedKey(obj); ok {
				return k, nil
			}
			key, err := keyFunc(obj)
			if err != nil {
				return "", err
			}
			id, err := clusterOf(obj)
			if err != nil {
				return "", err
			}
			return ClusterKey(resourcePrefix, key, id)
		}
		if keyFunc == nil {
			clusterKeyFunc = nil
		}
		// A cached scoped resource without a trigger of its own gets the
		// cluster as its trigger (trigger.go); upstream's cache supports
		// one trigger per resource, so one with its own keeps it.
		byClusterWatch := false
		if scope == Scoped && len(trigger) == 0 && getAttrsFunc != nil && keyFunc != nil {
			trigger = storage.IndexerFuncs{clusterField: clusterTrigger}
			getAttrsFunc = withClusterField(getAttrsFunc)
			byClusterWatch = true
		}
		guarded := *config
		guard := newKeyGuard(config.Transformer, config.Codec, config.Prefix, config.GroupResource,
			resourcePrefix, scope, newFunc, keyFunc)
		if scope == Scoped {
			guard.sizes = sizes
		}
		guarded.Transformer = guard
		guarded.Codec = guard.Codec()
		s, destroy, err := inner(&guarded, resourcePrefix, clusterKeyFunc, newFunc, newListFunc, getAttrsFunc, trigger, indexers)
		if err != nil {
			return nil, destroy, fmt.Errorf("decorating storage for %s: %w", resourcePrefix, err)
		}
		if wrap != nil && scope == Scoped {
			s = wrap(s, config)
		}
		return &clusterStorage{delegate: s, resourcePrefix: resourcePrefix, scope: scope, byCluster: byClusterWatch}, destroy, nil
	}
}
