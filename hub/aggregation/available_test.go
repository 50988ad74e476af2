package aggregation

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/wharfhub/wharf/hub/cluster"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

// TestAvailabilityQueueTakesTurns: APIService keys, as the index makes
// them, carry their workspace, so a tenant's many APIServices delay
// another tenant's check by one check, not by a pass over all of hers.
func TestAvailabilityQueueTakesTurns(t *testing.T) {
	const attacker, victim = cluster.ID("aaaaaaaaaaaaaaaa"), cluster.ID("vvvvvvvvvvvvvvvv")
	a := New(Config{TenantOf: func(id cluster.ID) string { return "tree:" + string(id) }})
	q := a.newQueue()
	defer q.ShutDown()
	add := func(id cluster.ID, group string) string {
		t.Helper()
		s := &apiregv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1." + group,
			Annotations: map[string]string{wstorage.ClusterAnnotation: string(id)}}}
		obj, err := wstorage.KeyByCluster(s)
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
	const backlog = 200
	for i := 0; i < backlog; i++ {
		add(attacker, fmt.Sprintf("g%d.example.com", i))
	}
	want := add(victim, "probe.example.com")
	for i := 0; i <= backlog; i++ {
		k, _ := q.Get()
		q.Done(k)
		if k == want {
			if i > 1 {
				t.Fatalf("victim's APIService handed out after %d of the attacker's %d", i, backlog)
			}
			return
		}
	}
	t.Fatal("victim's APIService never handed out")
}
