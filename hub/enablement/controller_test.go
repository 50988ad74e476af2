package enablement

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	providersv1alpha1 "github.com/wharfhub/wharf/hub/apis/providers/v1alpha1"
	"github.com/wharfhub/wharf/hub/cluster"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

// TestBindingQueueTakesTurns: binding keys, as the binding informer makes
// them, carry their workspace, so the controller's queue charges them to
// its tenant. A tenant's backlog of bindings (a provider's readiness
// change requeues every binding of it at once) delays another tenant's
// binding by one item; on the one-tenant queue it waited for all.
func TestBindingQueueTakesTurns(t *testing.T) {
	const attacker, victim = cluster.ID("aaaaaaaaaaaaaaaa"), cluster.ID("vvvvvvvvvvvvvvvv")
	x := newTestIndex(t)
	x.bindings = cache.NewSharedIndexInformer(nil, &providersv1alpha1.ProviderBinding{}, 0, cache.Indexers{})
	c, err := NewController(Config{TenantOf: func(id cluster.ID) string { return "tree:" + string(id) }}, x)
	if err != nil {
		t.Fatal(err)
	}
	q := c.keyed.Queue
	defer q.ShutDown()
	add := func(id cluster.ID, name string) string {
		t.Helper()
		b := &providersv1alpha1.ProviderBinding{ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{wstorage.ClusterAnnotation: string(id)}}}
		obj, err := wstorage.KeyByCluster(b)
		if err != nil {
			t.Fatal(err)
		}
		key, err := cache.MetaNamespaceKeyFunc(obj)
		if err != nil {
			t.Fatal(err)
		}
		q.Add(key)
		return key
	}
	const backlog = 300
	for i := 0; i < backlog; i++ {
		add(attacker, fmt.Sprintf("b-%d", i))
	}
	want := add(victim, "example")
	for i := 0; i <= backlog; i++ {
		k, _ := q.Get()
		q.Done(k)
		if k == want {
			if i > 1 {
				t.Fatalf("victim's binding handed out after %d of the attacker's %d", i, backlog)
			}
			return
		}
	}
	t.Fatal("victim's binding never handed out")
}
