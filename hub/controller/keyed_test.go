package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/wharfhub/wharf/hub/cluster"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

// tenantsOf maps clusters to tenants as the hub's index would; any other
// cluster is a tenant of its own.
func tenantsOf(m map[cluster.ID]string) TenantOfCluster {
	return func(id cluster.ID) string {
		if t, ok := m[id]; ok {
			return t
		}
		return "cluster:" + string(id)
	}
}

func TestClusterKeyTenant(t *testing.T) {
	of := ClusterKeyTenant(tenantsOf(map[cluster.ID]string{"aaaaaaaaaaaaaaaa": "tree:root:a"}))
	for _, tc := range []struct{ key, want string }{
		{"aaaaaaaaaaaaaaaa/default/cm", "tree:root:a"}, // namespaced informer key
		{"aaaaaaaaaaaaaaaa//binding", "tree:root:a"},   // cluster-scoped informer key
		{"aaaaaaaaaaaaaaaa/ns", "tree:root:a"},         // "<cluster>/<namespace>" work item
		{"bbbbbbbbbbbbbbbb//x", "cluster:bbbbbbbbbbbbbbbb"},
	} {
		if got := of(tc.key); got != tc.want {
			t.Errorf("tenant of %q = %q, want %q", tc.key, got, tc.want)
		}
	}
	if ClusterKeyTenant(nil) != nil {
		t.Error("no tenant function must give a one-tenant queue")
	}
}

func TestStoredClusterTenant(t *testing.T) {
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	for name, id := range map[string]string{"in-a": "aaaaaaaaaaaaaaaa", "global": string(cluster.Global), "bare": ""} {
		m := metav1.ObjectMeta{Name: name}
		if id != "" {
			m.Annotations = map[string]string{wstorage.ClusterAnnotation: id}
		}
		if err := store.Add(&metav1.PartialObjectMetadata{ObjectMeta: m}); err != nil {
			t.Fatal(err)
		}
	}
	of := StoredClusterTenant(store, tenantsOf(map[cluster.ID]string{"aaaaaaaaaaaaaaaa": "tree:root:a"}))
	for _, tc := range []struct{ key, want string }{
		{"in-a", "tree:root:a"},
		{"global", "cluster:" + string(cluster.Global)},
		{"bare", ""},    // no cluster recorded: the hub's
		{"deleted", ""}, // gone from the store: the hub's
	} {
		if got := of(tc.key); got != tc.want {
			t.Errorf("tenant of %q = %q, want %q", tc.key, got, tc.want)
		}
	}
}
