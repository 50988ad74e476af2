package storage_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"

	"github.com/wharfhub/wharf/hub/registry"
	"github.com/wharfhub/wharf/hub/selectors"
)

// TestListRecordsItsScan lists through the real watch cache and etcd and
// checks what a list tells hub/fairness of its cost: a selector's scope
// is every object of the workspace's namespace it was evaluated against
// (another workspace's objects are not), a limit's is what it answered
// and what it left.
func TestListRecordsItsScan(t *testing.T) {
	etcd := testserver.RunEtcd(t, nil)
	store := newConfigMapStoreOn(t, etcd.Endpoints())
	for i := range 30 {
		cm := configMap(fmt.Sprintf("a-%02d", i), "v", "")
		if i < 10 {
			cm.Labels = map[string]string{"app": "x"}
		}
		if _, err := store.Create(ctxFor(clusterA), cm, rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		cm := configMap(fmt.Sprintf("b-%02d", i), "v", "")
		cm.Labels = map[string]string{"app": "x"}
		if _, err := store.Create(ctxFor(clusterB), cm, rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := store.List(ctxFor(clusterA), &metainternalversion.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv := first.(*corev1.ConfigMapList).ResourceVersion
	// A second store's watch cache starts after rv (a write later): it
	// hands a list at rv exactly to etcd.
	if _, err := store.Create(ctxFor(clusterB), configMap("after", "v", ""), rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	later := newConfigMapStoreOn(t, etcd.Endpoints())
	const answered = 10_000 // bytes, as if the answer weighed that
	for _, c := range []struct {
		name     string
		store    *registry.Store // nil: store
		opts     metainternalversion.ListOptions
		items    int
		wantCost int64 // of an answer of `answered` bytes
		says     bool
	}{
		{name: "a selector some match", opts: metainternalversion.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{"app": "x"})},
			items: 10, wantCost: answered + 20*1024, says: true},
		{name: "a selector none match", opts: metainternalversion.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{"app": "none"})},
			items: 0, wantCost: answered + 30*1024, says: true},
		{name: "limit=1", opts: metainternalversion.ListOptions{Limit: 1},
			items: 1, wantCost: answered + 29*answered, says: true},
		{name: "a whole list says nothing more than its answer", opts: metainternalversion.ListOptions{}, items: 30},
		{name: "an exact resource version the cache serves", opts: metainternalversion.ListOptions{ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchExact},
			items: 30},
		{name: "an exact resource version older than the cache, read from etcd", store: later, opts: metainternalversion.ListOptions{ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchExact},
			items: 30, wantCost: -1, says: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			scan := &selectors.Scan{}
			st := store
			if c.store != nil {
				st = c.store
			}
			obj, err := st.List(selectors.WithScan(ctxFor(clusterA), scan), &c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(obj.(*corev1.ConfigMapList).Items); n != c.items {
				t.Fatalf("%d items, want %d", n, c.items)
			}
			cost, says := scan.Cost(answered)
			t.Logf("read %d bytes from etcd", scan.Read())
			if c.wantCost < 0 {
				// Read from etcd: every value of the scope, at least
				// their 30 names' worth.
				if !says || scan.Read() < 30*50 || cost != max(answered, scan.Read()) {
					t.Errorf("Cost(%d) = %d, %v with %d bytes read; want the bytes read from etcd", answered, cost, says, scan.Read())
				}
				return
			}
			if !c.says {
				if says || scan.Read() != 0 {
					t.Errorf("Cost(%d) = %d, %v with %d bytes read; want nothing said", answered, cost, says, scan.Read())
				}
				return
			}
			if says != c.says || cost != c.wantCost {
				t.Errorf("Cost(%d) = %d, %v; want %d, %v", answered, cost, says, c.wantCost, c.says)
			}
		})
	}
}
