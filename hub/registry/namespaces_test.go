package registry

import (
	"testing"

	"k8s.io/apiserver/pkg/registry/rest"
)

// TestNamespaceStorageVerbs pins the verbs the API installer will serve:
// upstream's namespace storage has no deletecollection.
func TestNamespaceStorageVerbs(t *testing.T) {
	var s rest.Storage = NewNamespaceStorage(&Store{})
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
}

func is[T any](s rest.Storage) bool { _, ok := s.(T); return ok }
