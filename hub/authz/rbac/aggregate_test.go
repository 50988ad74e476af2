package rbac

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func aggregating(name string, selectors ...map[string]string) *rbacv1.ClusterRole {
	r := newClusterRole(name, rule("stomped", "x", "x", "")) // own rules must be ignored
	r.AggregationRule = &rbacv1.AggregationRule{}
	for _, s := range selectors {
		r.AggregationRule.ClusterRoleSelectors = append(r.AggregationRule.ClusterRoleSelectors, metav1.LabelSelector{MatchLabels: s})
	}
	return r
}

func labelled(r *rbacv1.ClusterRole, labels map[string]string) *rbacv1.ClusterRole {
	r.Labels = labels
	return r
}

var (
	toView  = map[string]string{"rbac.wharf.dev/aggregate-to-view": "true"}
	toEdit  = map[string]string{"rbac.wharf.dev/aggregate-to-edit": "true"}
	toAdmin = map[string]string{"rbac.wharf.dev/aggregate-to-admin": "true"}
)

// TestAggregation checks aggregated ClusterRoles: chains (view into edit
// into admin), several selectors, cycles, ignored own rules, and that
// selectors never see another cluster's ClusterRoles.
func TestAggregation(t *testing.T) {
	alice := usr("alice")
	ask := func(verb, resource string) authorizer.AttributesRecord {
		return res(alice, verb, "", resource, "", "ns1", "")
	}
	tests := []struct {
		name  string
		a, b  []*rbacv1.ClusterRole // ClusterRoles of cluster A and B
		bind  string                // ClusterRole alice is bound to in A, ns1
		allow []authorizer.AttributesRecord
		deny  []authorizer.AttributesRecord
	}{
		{
			name: "chain view into edit into admin",
			a: []*rbacv1.ClusterRole{
				aggregating("view", toView),
				labelled(aggregating("edit", toEdit), toAdmin),
				aggregating("admin", toAdmin),
				labelled(newClusterRole("view-cm", rule("get,list", "", "configmaps", "")), toView),
				labelled(newClusterRole("edit-cm", rule("create,update", "", "configmaps", "")), toEdit),
				labelled(newClusterRole("admin-rbac", rule("create", "rbac.authorization.k8s.io", "rolebindings", "")), toAdmin),
			},
			bind:  "admin",
			allow: []authorizer.AttributesRecord{ask("create", "configmaps"), ask("update", "configmaps"), res(alice, "create", "rbac.authorization.k8s.io", "rolebindings", "", "ns1", "")},
			// view is not labelled into edit here, so admin lacks get.
			deny: []authorizer.AttributesRecord{ask("get", "configmaps"), ask("stomped", "x")},
		},
		{
			name: "several selectors",
			a: []*rbacv1.ClusterRole{
				aggregating("both", toView, toEdit),
				labelled(newClusterRole("v", rule("get", "", "secrets", "")), toView),
				labelled(newClusterRole("e", rule("delete", "", "secrets", "")), toEdit),
				labelled(newClusterRole("a", rule("patch", "", "secrets", "")), toAdmin),
			},
			bind:  "both",
			allow: []authorizer.AttributesRecord{ask("get", "secrets"), ask("delete", "secrets")},
			deny:  []authorizer.AttributesRecord{ask("patch", "secrets")},
		},
		{
			name: "cycle converges to the union",
			a: []*rbacv1.ClusterRole{
				labelled(aggregating("x", toEdit), toView),
				labelled(aggregating("y", toView), toEdit),
				labelled(newClusterRole("leaf", rule("get", "", "pods", "")), toEdit),
			},
			bind:  "y",
			allow: []authorizer.AttributesRecord{ask("get", "pods")},
			deny:  []authorizer.AttributesRecord{ask("stomped", "x")},
		},
		{
			name: "selectors see only their own cluster",
			a:    []*rbacv1.ClusterRole{aggregating("view", toView)},
			b:    []*rbacv1.ClusterRole{labelled(newClusterRole("b-cm", rule("get", "", "configmaps", "")), toView)},
			bind: "view",
			deny: []authorizer.AttributesRecord{ask("get", "configmaps")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newAuthorizer()
			policy{
				clusterRoles: tc.a,
				roleBindings: []*rbacv1.RoleBinding{newRoleBinding("ns1", "b", "ClusterRole:"+tc.bind, "User:alice")},
			}.load(a, clusterA)
			policy{clusterRoles: tc.b}.load(a, clusterB)
			for _, attrs := range tc.allow {
				if d, _, _ := a.Authorize(in(clusterA), attrs); d != authorizer.DecisionAllow {
					t.Errorf("want allow for %s", describe(attrs))
				}
			}
			for _, attrs := range tc.deny {
				if d, _, _ := a.Authorize(in(clusterA), attrs); d == authorizer.DecisionAllow {
					t.Errorf("want no opinion for %s", describe(attrs))
				}
			}
		})
	}
}

// TestAggregationFollowsChanges checks the aggregate is recomputed when a
// source ClusterRole is added, changed, relabelled or deleted.
func TestAggregationFollowsChanges(t *testing.T) {
	a := newAuthorizer()
	policy{
		clusterRoles: []*rbacv1.ClusterRole{aggregating("view", toView)},
		roleBindings: []*rbacv1.RoleBinding{newRoleBinding("ns1", "b", "ClusterRole:view", "User:alice")},
	}.load(a, clusterA)
	get := res(usr("alice"), "get", "", "configmaps", "", "ns1", "c")
	list := res(usr("alice"), "list", "", "configmaps", "", "ns1", "")
	check := func(step string, wantGet, wantList bool) {
		t.Helper()
		for attrs, want := range map[*authorizer.AttributesRecord]bool{&get: wantGet, &list: wantList} {
			d, _, _ := a.Authorize(in(clusterA), *attrs)
			if (d == authorizer.DecisionAllow) != want {
				t.Errorf("%s: %s allowed=%v, want %v", step, attrs.Verb, d == authorizer.DecisionAllow, want)
			}
		}
	}
	put := func(r *rbacv1.ClusterRole) {
		a.idx.update(clusterA, func(ci *clusterIndex) { ci.putClusterRole(r) })
		a.aggregateLater(clusterA)
	}

	check("no sources", false, false)
	put(labelled(newClusterRole("src", rule("get", "", "configmaps", "")), toView))
	check("source added", true, false)
	put(labelled(newClusterRole("src", rule("get,list", "", "configmaps", "")), toView))
	check("source widened", true, true)
	put(labelled(newClusterRole("src", rule("get,list", "", "configmaps", "")), toEdit))
	check("source relabelled away", false, false)
	put(labelled(newClusterRole("src", rule("list", "", "configmaps", "")), toView))
	check("source relabelled back", false, true)
	a.idx.update(clusterA, func(ci *clusterIndex) { ci.deleteClusterRole("src") })
	check("source deleted, aggregation not yet recomputed", false, false)
	a.aggregateLater(clusterA)
	check("source deleted", false, false)
}
