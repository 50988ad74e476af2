package enablement

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	providersv1alpha1 "github.com/wharfhub/wharf/hub/apis/providers/v1alpha1"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

// TestGroupOwnership: a second manifest claiming a group owns none of it.
func TestGroupOwnership(t *testing.T) {
	x := &Index{entries: cache.NewSharedIndexInformer(nil, &providersv1alpha1.CatalogEntry{}, 0, cache.Indexers{})}
	if err := x.entries.AddIndexers(cache.Indexers{byGroup: func(obj interface{}) ([]string, error) {
		var groups []string
		for _, a := range obj.(*providersv1alpha1.CatalogEntry).Spec.APIs {
			groups = append(groups, a.Group)
		}
		return groups, nil
	}}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	entry := func(name string, at time.Time, groups ...string) *providersv1alpha1.CatalogEntry {
		e := &providersv1alpha1.CatalogEntry{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(at),
			Annotations: map[string]string{wstorage.ClusterAnnotation: "root"}}}
		for _, g := range groups {
			e.Spec.APIs = append(e.Spec.APIs, providersv1alpha1.OwnedAPI{Group: g})
		}
		obj, err := wstorage.KeyByCluster(e)
		if err != nil {
			t.Fatal(err)
		}
		return obj.(*providersv1alpha1.CatalogEntry)
	}
	for _, e := range []*providersv1alpha1.CatalogEntry{
		entry("edges", t0, "edges.wharf.dev"),
		entry("rogue", t0.Add(time.Hour), "edges.wharf.dev", "rogue.example.com"),
		entry("aaa-later", t0.Add(time.Hour), "shared.example.com"),
		entry("zzz-first", t0.Add(-time.Hour), "shared.example.com"),
	} {
		if err := x.entries.GetIndexer().Add(e); err != nil {
			t.Fatal(err)
		}
	}
	for g, want := range map[string]string{"edges.wharf.dev": "edges", "rogue.example.com": "rogue", "shared.example.com": "zzz-first"} {
		if got, _ := x.ProviderOfGroup(g); got != want {
			t.Errorf("owner of %s = %s, want %s", g, got, want)
		}
	}
	if got := x.Groups("rogue"); len(got) != 1 || got[0] != "rogue.example.com" {
		t.Errorf("rogue's groups = %v", got)
	}
	if got := x.Groups("aaa-later"); len(got) != 0 {
		t.Errorf("aaa-later's groups = %v", got)
	}
}
