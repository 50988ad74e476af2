package rbac

import (
	"context"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/storage"
)

// StorageListWatch adapts a hub registry store to the ListerWatcher the
// informers need: it lists and watches every logical cluster (wildcard
// context) and leaves objects untouched, namespace included, since the
// informer transform keys them by cluster itself. Unlike
// storage.ClusterScopedListWatch it is safe for namespaced resources.
func StorageListWatch(s storage.ListWatcher) cache.ListerWatcher {
	return plainListWatch{&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return s.List(cluster.WithWildcard(ctx), internalOptions(opts))
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := s.Watch(cluster.WithWildcard(ctx), internalOptions(opts))
			if err != nil {
				return nil, err
			}
			// The watch cache sends serialization-caching wrappers; the
			// reflector insists on the informer's own type.
			return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
				if co, ok := e.Object.(runtime.CacheableObject); ok {
					e.Object = co.GetObject()
				}
				return e, true
			}), nil
		},
	}}
}

// plainListWatch makes the reflector use a plain list followed by a watch
// rather than a streaming watch-list, which needs the storage to honour
// sendInitialEvents. RBAC data is small enough that the list is cheap.
type plainListWatch struct{ *cache.ListWatch }

func (plainListWatch) IsWatchListSemanticsUnSupported() bool { return true }

func internalOptions(opts metav1.ListOptions) *metainternalversion.ListOptions {
	out := &metainternalversion.ListOptions{}
	_ = metainternalversion.Convert_v1_ListOptions_To_internalversion_ListOptions(&opts, out, nil)
	return out
}
