package clusters

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// InformerOptions configure NewInformer.
type InformerOptions struct {
	// ListerWatcher lists and watches across workspaces, usually built on a
	// Wildcard config.
	ListerWatcher cache.ListerWatcher
	// ObjectType is an example of the objects listed, such as
	// &unstructured.Unstructured{} or &corev1.ConfigMap{}.
	ObjectType runtime.Object
	// Handler receives the events; nil means none (a lister only).
	Handler cache.ResourceEventHandler
	// ResyncPeriod, if not zero, replays every object to Handler as an
	// update this often.
	ResyncPeriod time.Duration
	// Indexers are added to ByCluster and ByClusterNamespace.
	Indexers cache.Indexers
}

// Informer keeps a cluster-keyed cache of a wildcard list and watch and
// tells a handler about changes. Start it with Run.
type Informer struct {
	indexer    cache.Indexer
	controller cache.Controller
}

// NewInformer builds an informer whose store is keyed by Key.
//
// client-go's informers hard-wire the namespace/name key into their store
// and queue, so this one assembles the same parts (a DeltaFIFO feeding a
// Reflector-driven controller) with Key in both places.
func NewInformer(o InformerOptions) (*Informer, error) {
	if o.ListerWatcher == nil || o.ObjectType == nil {
		return nil, errors.New("clusters: an informer needs a ListerWatcher and an ObjectType")
	}
	idx := Indexers()
	for name, f := range o.Indexers {
		if _, taken := idx[name]; taken {
			return nil, fmt.Errorf("clusters: index %q is reserved", name)
		}
		idx[name] = f
	}
	handler := o.Handler
	if handler == nil {
		handler = cache.ResourceEventHandlerFuncs{}
	}
	indexer := cache.NewIndexer(Key, idx)
	fifo := cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{
		KeyFunction:           Key,
		KnownObjects:          indexer,
		EmitDeltaTypeReplaced: true,
	})
	inf := &Informer{indexer: indexer}
	inf.controller = cache.New(&cache.Config{
		Queue:            fifo,
		ListerWatcher:    listOnly{ListerWatcher: o.ListerWatcher, ListerWatcherWithContext: cache.ToListerWatcherWithContext(o.ListerWatcher)},
		ObjectType:       o.ObjectType,
		FullResyncPeriod: o.ResyncPeriod,
		Process: func(obj interface{}, initial bool) error {
			deltas, ok := obj.(cache.Deltas)
			if !ok {
				return fmt.Errorf("clusters: unexpected %T from the queue", obj)
			}
			return apply(indexer, handler, deltas, initial)
		},
	})
	return inf, nil
}

// listOnly makes the reflector start with a list, not a watch-list
// stream: the reflector collects a stream's objects in a store of its own,
// keyed by namespace/name, which would collapse same-named objects of two
// workspaces before they ever reach this informer's store.
type listOnly struct {
	cache.ListerWatcher
	cache.ListerWatcherWithContext
}

// IsWatchListSemanticsUnSupported is what client-go's reflector asks.
func (listOnly) IsWatchListSemanticsUnSupported() bool { return true }

// apply moves deltas into the store, oldest first, and tells the handler:
// what client-go's informers do, with a store keyed by cluster.
func apply(store cache.Indexer, h cache.ResourceEventHandler, deltas cache.Deltas, initial bool) error {
	for _, d := range deltas {
		switch d.Type {
		case cache.Sync, cache.Replaced, cache.Added, cache.Updated:
			old, exists, err := store.Get(d.Object)
			if err != nil {
				return err
			}
			if exists {
				if err := store.Update(d.Object); err != nil {
					return err
				}
				h.OnUpdate(old, d.Object)
				continue
			}
			if err := store.Add(d.Object); err != nil {
				return err
			}
			h.OnAdd(d.Object, initial)
		case cache.Deleted:
			if err := store.Delete(d.Object); err != nil {
				return err
			}
			h.OnDelete(d.Object)
		}
	}
	return nil
}

// Run lists, watches and dispatches until ctx ends.
func (i *Informer) Run(ctx context.Context) { i.controller.RunWithContext(ctx) }

// HasSynced reports whether the first list has been delivered.
func (i *Informer) HasSynced() bool { return i.controller.HasSynced() }

// Indexer is the informer's store, for custom index queries.
func (i *Informer) Indexer() cache.Indexer { return i.indexer }

// Lister reads the informer's store one cluster at a time.
func (i *Informer) Lister() *Lister { return &Lister{indexer: i.indexer} }
