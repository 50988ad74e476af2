package rbac

import (
	"context"
	"slices"
	"sync"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/wharfhub/wharf/hub/cluster"
)

// TestWriteBackRules: after aggregation, each aggregated ClusterRole's
// stored rules are rewritten, per cluster, to the rules it aggregates (as
// upstream's controller does), only where they differ, and never with
// another cluster's roles. Once stored, nothing more is written.
func TestWriteBackRules(t *testing.T) {
	a := newAuthorizer()
	var (
		mu     sync.Mutex
		writes = map[cluster.ID]map[string][]rbacv1.PolicyRule{}
	)
	a.EnableWriteBack(func(_ context.Context, id cluster.ID, name string, rules []rbacv1.PolicyRule) error {
		mu.Lock()
		defer mu.Unlock()
		if writes[id] == nil {
			writes[id] = map[string][]rbacv1.PolicyRule{}
		}
		writes[id][name] = rules
		return nil
	}, 0, nil)
	get, list := rule("get", "", "configmaps", ""), rule("list", "", "secrets", "")
	putCR(a, clusterA, labelled(newClusterRole("a-view", get), toView))
	putCR(a, clusterA, labelled(newClusterRole("a-view2", get, list), toView))
	putCR(a, clusterA, aggregating("view", toView))
	putCR(a, clusterB, labelled(newClusterRole("b-view", rule("delete", "", "secrets", "")), toView))
	putCR(a, clusterB, aggregating("view", toView))

	for _, id := range []cluster.ID{clusterA, clusterB} {
		if err := a.writeBackCluster(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := writes[clusterA]["view"], []rbacv1.PolicyRule{get, list}; !slices.EqualFunc(got, want, rulesEqual) {
		t.Errorf("cluster A view: %v, want %v (deduplicated, in role order)", got, want)
	}
	if got := writes[clusterB]["view"]; len(got) != 1 || got[0].Verbs[0] != "delete" {
		t.Errorf("cluster B view: %v, want only B's rule", got)
	}

	// The stored role now holds them: nothing left to write.
	stored := aggregating("view", toView)
	stored.Rules = writes[clusterA]["view"]
	putCR(a, clusterA, stored)
	if p, _ := a.idx.pendingWriteBacks(clusterA, 0); len(p) != 0 {
		t.Errorf("pending after write-back: %+v", p)
	}
}

// TestWriteBackBudget: the rules written back per cluster stay within the
// budget, so aggregated roles cannot multiply what a tenant stores; the
// roles beyond it are skipped (and still grant what they aggregate).
func TestWriteBackBudget(t *testing.T) {
	a := newAuthorizer()
	a.EnableWriteBack(func(context.Context, cluster.ID, string, []rbacv1.PolicyRule) error { return nil }, 3, nil)
	putCR(a, clusterA, labelled(newClusterRole("base", rule("get", "", "a", ""), rule("get", "", "b", "")), toView))
	for _, n := range []string{"agg1", "agg2", "agg3"} {
		putCR(a, clusterA, aggregating(n, toView))
	}
	pending, skipped := a.idx.pendingWriteBacks(clusterA, 3)
	if len(pending) != 1 || pending[0].name != "agg1" || !slices.Equal(skipped, []string{"agg2", "agg3"}) {
		t.Fatalf("pending %+v, skipped %v; want agg1 written, agg2 and agg3 over the budget", pending, skipped)
	}
}

func rulesEqual(a, b rbacv1.PolicyRule) bool {
	return slices.Equal(a.Verbs, b.Verbs) && slices.Equal(a.APIGroups, b.APIGroups) &&
		slices.Equal(a.Resources, b.Resources) && slices.Equal(a.ResourceNames, b.ResourceNames) &&
		slices.Equal(a.NonResourceURLs, b.NonResourceURLs)
}
