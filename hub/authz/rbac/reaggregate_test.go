package rbac

import (
	"context"
	"fmt"
	"sync"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/wharfhub/wharf/hub/cluster"
)

// queuedAuthorizer is an authorizer with the aggregation workers of
// production running, whose first compute step for cluster slow closes
// inside and waits for release. Every swapped-in aggregation is sent on the
// returned channel.
func queuedAuthorizer(t *testing.T, slow cluster.ID) (a *Authorizer, inside, release chan struct{}, swapped chan cluster.ID) {
	t.Helper()
	a = newAuthorizer()
	a.queue = newAggregationQueue()
	inside, release = make(chan struct{}), make(chan struct{})
	swapped = make(chan cluster.ID, 16)
	var once sync.Once
	a.idx.compute = func(id cluster.ID, roles map[string]*rbacv1.ClusterRole) aggregation {
		if id == slow {
			once.Do(func() {
				close(inside)
				<-release
			})
		}
		return aggregate(roles)
	}
	a.idx.swapped = func(id cluster.ID) { swapped <- id }
	// The hub is ready before the tenants below start writing.
	if !a.HasSynced() {
		t.Fatal("an empty index is not synced")
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go a.runAggregation(ctx)
	return a, inside, release, swapped
}

// putCR feeds a ClusterRole through the informer handler's path: file it,
// then schedule the aggregation.
func putCR(a *Authorizer, id cluster.ID, r *rbacv1.ClusterRole) {
	r = r.DeepCopy()
	labels := r.Labels
	r.ObjectMeta = objMeta(id, "", r.Name)
	r.Labels = labels
	put := func(ci *clusterIndex, _ string, o metav1.Object) { ci.putClusterRole(o.(*rbacv1.ClusterRole)) }
	if got, ok := a.apply(r, put, nil); ok {
		a.aggregateLater(got)
	}
}

// TestAggregationBlocksOnlyItsCluster: while cluster A's aggregation is
// being computed (a tenant's huge aggregated roles, held here on a
// channel), A's partition still answers and takes writes, and cluster B's
// ClusterRole events are filed and aggregated. Before aggregation left the
// informer handler and the partition lock, B waited for A (attack review
// B6b); the test then hangs instead of passing. No clock is involved.
func TestAggregationBlocksOnlyItsCluster(t *testing.T) {
	a, inside, release, swapped := queuedAuthorizer(t, clusterA)
	owner := usr("owner")

	putCR(a, clusterA, labelled(newClusterRole("part", rule("get", "", "configmaps", "")), toView))
	putCR(a, clusterA, aggregating("view", toView))
	a.idx.update(clusterA, func(ci *clusterIndex) { ci.putClusterRoleBinding(newClusterRoleBinding("owner", "view", "User:owner")) })
	<-inside

	// A reads and writes A while A's aggregation is held.
	if d, _, _ := a.Authorize(in(clusterA), res(owner, "get", "", "configmaps", "", "ns1", "")); d == authorizer.DecisionAllow {
		t.Fatal("A's aggregation was swapped in before it was computed")
	}
	a.idx.update(clusterA, func(ci *clusterIndex) { ci.putRole("ns1", newRole("ns1", "r", rule("get", "", "pods", ""))) })

	// B's ClusterRole events go through and B's aggregation lands.
	a.idx.update(clusterB, func(ci *clusterIndex) { ci.putClusterRoleBinding(newClusterRoleBinding("owner", "view", "User:owner")) })
	putCR(a, clusterB, labelled(newClusterRole("part", rule("list", "", "secrets", "")), toView))
	putCR(a, clusterB, aggregating("view", toView))
	for id := range swapped {
		if id != clusterB {
			t.Fatalf("aggregation of %s swapped in while A's is held", id)
		}
		if d, _, _ := a.Authorize(in(clusterB), res(owner, "list", "", "secrets", "", "ns1", "")); d == authorizer.DecisionAllow {
			break
		}
	}

	close(release)
	for id := range swapped {
		if id != clusterA {
			continue
		}
		if d, _, _ := a.Authorize(in(clusterA), res(owner, "get", "", "configmaps", "", "ns1", "")); d == authorizer.DecisionAllow {
			break
		}
	}
}

// TestStaleAggregationIsDropped: an aggregation computed from a snapshot
// that a later ClusterRole change outdated is not swapped in; the later
// run's result is.
func TestStaleAggregationIsDropped(t *testing.T) {
	a, inside, release, swapped := queuedAuthorizer(t, clusterA)
	owner := usr("owner")
	a.idx.update(clusterA, func(ci *clusterIndex) { ci.putClusterRoleBinding(newClusterRoleBinding("owner", "view", "User:owner")) })
	putCR(a, clusterA, aggregating("view", toView))
	<-inside
	// Changed while the first run computes: that run's result is stale.
	putCR(a, clusterA, labelled(newClusterRole("part", rule("get", "", "configmaps", "")), toView))
	close(release)
	if id := <-swapped; id != clusterA {
		t.Fatalf("swapped %s, want %s", id, clusterA)
	}
	if d, _, _ := a.Authorize(in(clusterA), res(owner, "get", "", "configmaps", "", "ns1", "")); d != authorizer.DecisionAllow {
		t.Fatalf("the first swapped-in aggregation is the stale one: %v", d)
	}
}

// TestAggregationByReference: aggregated roles hold the names of the roles
// they reach and hand out those roles' own rule lists, so thirty
// aggregated roles over three big roles store no rule twice (attack review
// B6b: 30 x 3 x 14,000 copied rules were 300 MB).
func TestAggregationByReference(t *testing.T) {
	a := newAuthorizer()
	var p policy
	for m := range 3 {
		big := labelled(newClusterRole(fmt.Sprintf("big%d", m)), map[string]string{"x": "y"})
		for i := range 1000 {
			big.Rules = append(big.Rules, named(rule("get", "", "configmaps", ""), fmt.Sprintf("n%d-%d", m, i)))
		}
		p.clusterRoles = append(p.clusterRoles, big)
	}
	for r := range 30 {
		p.clusterRoles = append(p.clusterRoles, aggregating(fmt.Sprintf("root%d", r), map[string]string{"x": "y"}))
	}
	p.load(a, clusterA)
	a.idx.read(clusterA, func(ci *clusterIndex) {
		for r := range 30 {
			name := fmt.Sprintf("root%d", r)
			if got := ci.aggregated[name]; fmt.Sprint(got) != "[big0 big1 big2]" {
				t.Fatalf("%s reaches %v", name, got)
			}
			lists, _ := ci.clusterRoleRules(name)
			for m, l := range lists {
				if &l[0] != &ci.clusterRoles[fmt.Sprintf("big%d", m)].Rules[0] {
					t.Fatalf("%s: rules of big%d are a copy", name, m)
				}
			}
		}
	})
	rules, err := a.RoleRefRules(in(clusterA), rbacv1.RoleRef{Kind: "ClusterRole", Name: "root7"}, "")
	if err != nil || len(rules) != 3000 {
		t.Fatalf("RoleRefRules: %d rules, %v", len(rules), err)
	}
}

// TestHasSyncedWaitsForFirstAggregation: the index is not ready while an
// aggregation of the initial list is pending, and a later pending one
// (any tenant's) does not make it unready again.
func TestHasSyncedWaitsForFirstAggregation(t *testing.T) {
	a := newAuthorizer()
	a.idx.update(clusterA, func(ci *clusterIndex) { ci.putClusterRole(aggregating("view", toView)) })
	if a.HasSynced() {
		t.Fatal("synced with an aggregation pending")
	}
	a.aggregateLater(clusterA)
	if !a.HasSynced() {
		t.Fatal("not synced after the aggregation")
	}
	a.idx.update(clusterB, func(ci *clusterIndex) { ci.putClusterRole(aggregating("view", toView)) })
	if !a.HasSynced() {
		t.Fatal("a pending aggregation of one workspace unsynced the hub")
	}
}
