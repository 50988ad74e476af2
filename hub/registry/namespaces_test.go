package registry

import (
	"testing"

	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
)

// TestNamespaceStorageVerbs pins the verbs the API installer will serve:
// upstream's namespace storage has no deletecollection.
func TestNamespaceStorageVerbs(t *testing.T) {
	ns := NewNamespaceStorage(&Store{Store: &genericregistry.Store{UpdateStrategy: strategy{kind: &Kind{}}}})
	var s rest.Storage = ns
	if _, ok := s.(rest.CollectionDeleter); ok {
		t.Errorf("namespace storage implements rest.CollectionDeleter; DELETE /api/v1/namespaces would be served")
	}
	for name, ok := range map[string]bool{
		"create": is[rest.Creater](s), "get": is[rest.Getter](s), "list": is[rest.Lister](s), "watch": is[rest.Watcher](s),
		"update": is[rest.Updater](s), "delete": is[rest.GracefulDeleter](s),
	} {
		if !ok {
			t.Errorf("namespace storage lacks %s", name)
		}
	}
	// As upstream: status is get, update and patch; finalize is update
	// only (PUT).
	var status, finalize rest.Storage = ns.Status(), ns.Finalize()
	if !is[rest.Getter](status) || !is[rest.Updater](status) {
		t.Errorf("namespaces/status must serve get and update")
	}
	if is[rest.Getter](finalize) || !is[rest.Updater](finalize) || is[rest.Creater](finalize) {
		t.Errorf("namespaces/finalize must serve update alone")
	}
}

func is[T any](s rest.Storage) bool { _, ok := s.(T); return ok }
