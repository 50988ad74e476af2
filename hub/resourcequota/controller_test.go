package resourcequota

import (
	"fmt"
	"testing"

	"github.com/wharfhub/wharf/hub/cluster"
)

// TestQueueTakesTurns: the etcd keys the watch sees become work items that
// carry their cluster, so a tenant's backlog of quota namespaces delays
// another tenant's new quota by one recount (on the FIFO queue it waited
// for all of them).
func TestQueueTakesTurns(t *testing.T) {
	const attacker, victim = cluster.ID("aaaaaaaaaaaaaaaa"), cluster.ID("vvvvvvvvvvvvvvvv")
	c := &Controller{TenantOf: func(id cluster.ID) string { return "tree:" + string(id) }}
	q := c.newQueue()
	defer q.ShutDown()
	add := func(etcdKey string) {
		t.Helper()
		ns, ok := namespaceOfKey(etcdKey)
		if !ok {
			t.Fatalf("no work item for %q", etcdKey)
		}
		q.Add(ns)
	}
	const backlog = 300
	for i := 0; i < backlog; i++ {
		add(fmt.Sprintf("core/resourcequotas/%s/ns-%d/q", attacker, i))
	}
	add(fmt.Sprintf("core/resourcequotas/%s/default/q", victim))
	for i := 0; i <= backlog; i++ {
		k, _ := q.Get()
		q.Done(k)
		if k == string(victim)+"/default" {
			if i > 1 {
				t.Fatalf("victim's namespace handed out after %d of the attacker's %d", i, backlog)
			}
			return
		}
	}
	t.Fatal("victim's namespace never handed out")
}
