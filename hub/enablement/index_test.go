package enablement

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	providersv1alpha1 "github.com/wharfhub/wharf/hub/apis/providers/v1alpha1"
	"github.com/wharfhub/wharf/hub/cluster"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

const testRoot = cluster.ID("root")

// newTestIndex is an Index whose catalog informer store holds entries,
// each recorded by the storage in cluster in (KeyByCluster, as the real
// informer's transform stores them).
func newTestIndex(t *testing.T, entries ...*providersv1alpha1.CatalogEntry) *Index {
	t.Helper()
	x := &Index{entries: cache.NewSharedIndexInformer(nil, &providersv1alpha1.CatalogEntry{}, 0, cache.Indexers{}), root: testRoot}
	if err := x.entries.AddIndexers(cache.Indexers{byGroup: x.claims}); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		obj, err := wstorage.KeyByCluster(e)
		if err != nil {
			t.Fatal(err)
		}
		if err := x.entries.GetIndexer().Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	return x
}

func entryIn(in cluster.ID, name string, at time.Time, groups ...string) *providersv1alpha1.CatalogEntry {
	e := &providersv1alpha1.CatalogEntry{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(at),
		Annotations: map[string]string{wstorage.ClusterAnnotation: string(in)}}}
	for _, g := range groups {
		e.Spec.APIs = append(e.Spec.APIs, providersv1alpha1.OwnedAPI{Group: g})
	}
	return e
}

// TestGroupOwnership: a second manifest claiming a group owns none of it;
// only entries recorded in root count, and reserved groups belong to no
// provider, whoever claims them.
func TestGroupOwnership(t *testing.T) {
	t0 := time.Now()
	x := newTestIndex(t,
		entryIn(testRoot, "edges", t0, "edges.wharf.dev"),
		entryIn(testRoot, "rogue", t0.Add(time.Hour), "edges.wharf.dev", "rogue.example.com"),
		entryIn(testRoot, "aaa-later", t0.Add(time.Hour), "shared.example.com"),
		entryIn(testRoot, "zzz-first", t0.Add(-time.Hour), "shared.example.com"),
		entryIn(testRoot, "greedy", t0.Add(-2*time.Hour), "rbac.authorization.k8s.io", "tenancy.wharf.dev", "", "apps", "greedy.example.com"),
		// A tenant's entry, older than every root entry, claiming
		// built-in groups, another provider's group and a free one.
		entryIn("bobhome", "tenant", t0.Add(-3*time.Hour), "rbac.authorization.k8s.io", "tenancy.wharf.dev", "edges.wharf.dev", "free.example.com"),
		entryIn("", "unrecorded", t0.Add(-3*time.Hour), "free.example.com"),
		// Older than the edges entry, and the only claim of
		// resource-proxy's group: a shipped provider's group is that
		// provider's alone (catalog.MayOwn), loaded or not.
		entryIn(testRoot, "squatter", t0.Add(-4*time.Hour), "edges.wharf.dev", "proxy.wharf.dev", "squat.example.com"),
	)
	for _, c := range []struct {
		group, owner string
	}{
		{"edges.wharf.dev", "edges"},
		{"rogue.example.com", "rogue"},
		{"shared.example.com", "zzz-first"},
		{"greedy.example.com", "greedy"},
		{"rbac.authorization.k8s.io", ""},
		{"tenancy.wharf.dev", ""},
		{"providers.wharf.dev", ""},
		{"proxy.wharf.dev", ""},
		{"squat.example.com", "squatter"},
		{"apps", ""},
		{"", ""},
		{"free.example.com", ""},
	} {
		t.Run("owner of "+c.group, func(t *testing.T) {
			got, ok := x.ProviderOfGroup(c.group)
			if got != c.owner || ok != (c.owner != "") {
				t.Errorf("ProviderOfGroup(%q) = %q, %v; want %q", c.group, got, ok, c.owner)
			}
		})
	}
	for _, c := range []struct {
		provider string
		groups   []string
	}{
		{"rogue", []string{"rogue.example.com"}},
		{"aaa-later", nil},
		{"greedy", []string{"greedy.example.com"}},
		{"tenant", nil},
		{"unrecorded", nil},
		{"squatter", []string{"squat.example.com"}},
	} {
		t.Run("groups of "+c.provider, func(t *testing.T) {
			got := x.Groups(c.provider)
			if len(got) != len(c.groups) || (len(got) > 0 && got[0] != c.groups[0]) {
				t.Errorf("Groups(%s) = %v, want %v", c.provider, got, c.groups)
			}
		})
	}
	if _, ok := x.Entry("tenant"); ok {
		t.Error("Entry(tenant) found an entry outside root")
	}
}
