package storage

import (
	"context"
	"fmt"
	"strings"
	"time"

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

func internalListOptions(opts metav1.ListOptions) *metainternalversion.ListOptions {
	out := &metainternalversion.ListOptions{}
	_ = metainternalversion.Convert_v1_ListOptions_To_internalversion_ListOptions(&opts, out, nil)
	return out
}

// NewClusterInformer returns an informer over a resource in every logical
// cluster, for the hub's own controllers. Its store holds KeyByCluster
// copies: read an object's cluster and namespace with
// SplitClusterNamespace, and clear the namespace field before writing an
// object back.
func NewClusterInformer(s ListWatcher, example runtime.Object, resync time.Duration) (cache.SharedIndexInformer, error) {
	inf := cache.NewSharedIndexInformer(WildcardListWatch(s), example, resync, cache.Indexers{})
	if err := inf.SetTransform(KeyByCluster); err != nil {
		return nil, fmt.Errorf("informer transform for %T: %w", example, err)
	}
	return inf, nil
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
