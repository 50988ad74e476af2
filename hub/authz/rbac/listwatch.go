package rbac

import (
	"k8s.io/client-go/tools/cache"

	"github.com/wharfhub/wharf/hub/storage"
)

// StorageListWatch adapts a hub registry store to the ListerWatcher the
// informers need: it lists and watches every logical cluster (wildcard
// context) and leaves objects untouched, namespace included, since the
// informer transform keys them by cluster itself. Unlike
// a namespace-rewriting list-watch it is safe for namespaced resources.
func StorageListWatch(s storage.ListWatcher) cache.ListerWatcher {
	return plainListWatch{storage.WildcardListWatch(s)}
}

// plainListWatch makes the reflector use a plain list followed by a watch
// rather than a streaming watch-list, which needs the storage to honour
// sendInitialEvents. RBAC data is small enough that the list is cheap.
type plainListWatch struct{ cache.ListerWatcher }

func (plainListWatch) IsWatchListSemanticsUnSupported() bool { return true }
