package storage

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/wharfhub/wharf/hub/cluster"
)

// ListWatcher is the part of a registry store a hub controller reads.
type ListWatcher interface {
	rest.Lister
	rest.Watcher
}

// ClusterScopedListWatch lists and watches a cluster-scoped resource across
// every logical cluster, for the hub's own controllers.
//
// Names of cluster-scoped objects repeat across clusters, so the returned
// copies carry their cluster id in metadata.namespace (which cluster-scoped
// objects otherwise leave empty): informers keyed by namespace/name then
// keep one entry per object. Controllers must clear it before writing back.
func ClusterScopedListWatch(s ListWatcher) cache.ListerWatcher {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			obj, err := s.List(cluster.WithWildcard(ctx), internalListOptions(opts))
			if err != nil {
				return nil, err
			}
			items, err := meta.ExtractList(obj)
			if err != nil {
				return nil, err
			}
			for i := range items {
				if items[i], err = withClusterAsNamespace(items[i]); err != nil {
					return nil, err
				}
			}
			if err := meta.SetList(obj, items); err != nil {
				return nil, err
			}
			return obj, nil
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := s.Watch(cluster.WithWildcard(ctx), internalListOptions(opts))
			if err != nil {
				return nil, err
			}
			return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
				// The watch cache hands out shared, serialization-caching
				// wrappers; never mutate what it hands out.
				if co, ok := e.Object.(runtime.CacheableObject); ok {
					e.Object = co.GetObject()
				}
				if e.Type == watch.Error || e.Type == watch.Bookmark {
					return e, true
				}
				obj, err := withClusterAsNamespace(e.Object)
				if err != nil {
					return e, false
				}
				e.Object = obj
				return e, true
			}), nil
		},
	}
}

func withClusterAsNamespace(obj runtime.Object) (runtime.Object, error) {
	obj = obj.DeepCopyObject()
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("object without metadata: %w", err)
	}
	m.SetNamespace(m.GetAnnotations()[ClusterAnnotation])
	return obj, nil
}

func internalListOptions(opts metav1.ListOptions) *metainternalversion.ListOptions {
	out := &metainternalversion.ListOptions{}
	_ = metainternalversion.Convert_v1_ListOptions_To_internalversion_ListOptions(&opts, out, nil)
	return out
}

// WildcardListWatch lists and watches a resource across every logical
// cluster and hands objects over unchanged, for informers that key objects
// by cluster themselves (through a transform).
func WildcardListWatch(s ListWatcher) cache.ListerWatcher {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return s.List(cluster.WithWildcard(ctx), internalListOptions(opts))
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := s.Watch(cluster.WithWildcard(ctx), internalListOptions(opts))
			if err != nil {
				return nil, err
			}
			return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
				if co, ok := e.Object.(runtime.CacheableObject); ok {
					e.Object = co.GetObject()
				}
				return e, true
			}), nil
		},
	}
}

// KeyByCluster is an informer transform for objects of every cluster. An
// informer keys its store by namespace/name, so objects of the same name in
// two clusters would overwrite each other and produce bogus update and
// delete events. The transform stores a copy whose namespace is
// "<cluster>/<namespace>" ("<cluster>/" for cluster-scoped objects): a real
// namespace never contains "/", which keeps keys unique and the transform
// idempotent. The copy also keeps the caller's (possibly shared watch-cache)
// objects unmodified, and drops managedFields, which controllers never read.
// SplitClusterNamespace undoes it.
func KeyByCluster(obj interface{}) (interface{}, error) {
	if co, ok := obj.(runtime.CacheableObject); ok {
		obj = co.GetObject()
	}
	ro, ok := obj.(runtime.Object)
	if !ok {
		return obj, nil
	}
	m, err := meta.Accessor(ro)
	if err != nil || strings.Contains(m.GetNamespace(), "/") {
		return obj, nil
	}
	cp := ro.DeepCopyObject()
	cm, err := meta.Accessor(cp)
	if err != nil {
		return nil, fmt.Errorf("copy of %T: %w", obj, err)
	}
	cm.SetNamespace(m.GetAnnotations()[ClusterAnnotation] + "/" + m.GetNamespace())
	cm.SetManagedFields(nil)
	return cp, nil
}

// SplitClusterNamespace returns the cluster and the real namespace of an
// object stored through KeyByCluster.
func SplitClusterNamespace(m metav1.Object) (cluster.ID, string) {
	id, ns, _ := strings.Cut(m.GetNamespace(), "/")
	return cluster.ID(id), ns
}
