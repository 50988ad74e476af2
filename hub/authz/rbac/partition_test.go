package rbac

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/wharfhub/wharf/hub/cluster"
)

// TestSlowWriteBlocksOnlyItsCluster: while a write holds one workspace's
// partition (a tenant's huge aggregated ClusterRole being indexed), reads
// and writes of another workspace go on. Before per-partition locking one
// map-wide lock stalled every workspace's RBAC decisions (attack review,
// finding review:B6). No clock is involved: the slow write waits on a
// channel that is closed only after the other cluster was served, so the
// test hangs (and times out) exactly when isolation is lost.
func TestSlowWriteBlocksOnlyItsCluster(t *testing.T) {
	x := newIndex()
	a, b := cluster.ID("aaaaaaaaaaaaaaaa"), cluster.ID("bbbbbbbbbbbbbbbb")
	x.update(b, func(ci *clusterIndex) { ci.putClusterRole(newClusterRole("view", rule("get", "", "configmaps", ""))) })

	inside, release := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		x.update(a, func(ci *clusterIndex) {
			ci.putClusterRole(newClusterRole("big"))
			close(inside)
			<-release
		})
	}()
	<-inside
	var found bool
	x.read(b, func(ci *clusterIndex) { _, found = ci.clusterRoleRules("view") })
	if !found {
		t.Fatal("cluster b's ClusterRole not readable while cluster a is being written")
	}
	x.update(b, func(ci *clusterIndex) { ci.deleteClusterRole("view") })
	if x.size() != 1 {
		t.Fatalf("size = %d, want 1 (b dropped, a in progress)", x.size())
	}
	close(release)
	<-done
	x.read(a, func(ci *clusterIndex) { _, found = ci.clusterRoleRules("big") })
	if !found {
		t.Fatal("cluster a's write was lost")
	}
}

// TestDroppedPartitionIsReplaced: a write that races with the removal of
// its emptied partition lands in a live partition, never a dropped one.
func TestDroppedPartitionIsReplaced(t *testing.T) {
	x := newIndex()
	id := cluster.ID("cccccccccccccccc")
	for i := 0; i < 100; i++ {
		x.update(id, func(ci *clusterIndex) { ci.putClusterRole(newClusterRole("r")) })
		x.update(id, func(ci *clusterIndex) { ci.deleteClusterRole("r") })
	}
	done := make(chan struct{})
	for w := 0; w < 4; w++ {
		go func(w int) {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 200; i++ {
				name := fmt.Sprintf("r%d", w)
				x.update(id, func(ci *clusterIndex) { ci.putClusterRole(newClusterRole(name)) })
				if i < 199 {
					x.update(id, func(ci *clusterIndex) { ci.deleteClusterRole(name) })
				}
			}
		}(w)
	}
	for w := 0; w < 4; w++ {
		<-done
	}
	n := 0
	x.read(id, func(ci *clusterIndex) { n = len(ci.clusterRoles) })
	if n != 4 {
		t.Fatalf("%d ClusterRoles survive, want 4: a write went to a dropped partition", n)
	}
}

// TestRuleKeyMatchesDeepEqual: the aggregation's duplicate check treats two
// rules alike exactly when reflect.DeepEqual does, however values are
// chosen to collide in a naive encoding.
func TestRuleKeyMatchesDeepEqual(t *testing.T) {
	rules := []rbacv1.PolicyRule{
		{Verbs: []string{"get"}, Resources: []string{"a,b"}},
		{Verbs: []string{"get"}, Resources: []string{"a", "b"}},
		{Verbs: []string{"get"}, Resources: []string{}},
		{Verbs: []string{"get"}},
		{Verbs: []string{"get", ""}},
		{Verbs: []string{`get";1"`}},
		{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"x"}},
		{Verbs: []string{"get"}, APIGroups: []string{"x"}},
		{Verbs: []string{"get"}, ResourceNames: []string{"x"}},
		{Verbs: []string{"get"}, NonResourceURLs: []string{"x"}},
		{Verbs: []string{"get"}, Resources: []string{"a,b"}},
	}
	var b1, b2 strings.Builder
	for i := range rules {
		for j := range rules {
			same := ruleKey(&b1, &rules[i]) == ruleKey(&b2, &rules[j])
			if want := reflect.DeepEqual(rules[i], rules[j]); same != want {
				t.Errorf("rules %d and %d: same key = %v, DeepEqual = %v", i, j, same, want)
			}
		}
	}
}
