package rbac

import (
	"fmt"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// bigWorkspace is attack review B6b's payload cut to the default quota:
// three ClusterRoles of 6,000 distinct rules each (18,000 of the 20,000
// rules allowed) selected by 100 aggregated roles (the bound), plus 1,000
// rule-less labelled roles that only make the selectors work, and an owner
// bound to one of the aggregated roles.
func bigWorkspace() policy {
	var p policy
	for m := range 3 {
		big := labelled(newClusterRole(fmt.Sprintf("big%d", m)), map[string]string{"x": "y"})
		for i := range 6000 {
			big.Rules = append(big.Rules, named(rule("get", "", "configmaps", ""), fmt.Sprintf("n%d-%d", m, i)))
		}
		p.clusterRoles = append(p.clusterRoles, big)
	}
	for i := range 1000 {
		p.clusterRoles = append(p.clusterRoles, labelled(newClusterRole(fmt.Sprintf("empty%d", i)), map[string]string{"x": "y"}))
	}
	for r := range 100 {
		p.clusterRoles = append(p.clusterRoles, aggregating(fmt.Sprintf("root%d", r), map[string]string{"x": "y"}))
	}
	p.clusterRoleBindings = []*rbacv1.ClusterRoleBinding{newClusterRoleBinding("owner", "root0", "User:owner")}
	return p
}

// BenchmarkReaggregateBig measures one re-aggregation of bigWorkspace, the
// work a single ClusterRole write there costs, off every lock.
func BenchmarkReaggregateBig(b *testing.B) {
	a := newAuthorizer()
	bigWorkspace().load(a, clusterA)
	var roles map[string]*rbacv1.ClusterRole
	a.idx.read(clusterA, func(ci *clusterIndex) { roles = ci.clusterRoles })
	b.ReportAllocs()
	for b.Loop() {
		if agg := aggregate(roles); len(agg) != 100 {
			b.Fatalf("%d aggregated roles", len(agg))
		}
	}
}

// BenchmarkAuthorizeBig measures decisions in bigWorkspace: the first
// rule allows, the last rule allows (a walk of all 18,000), nothing allows
// (the same walk), and a stranger with no binding there, which is what
// another tenant's whoami costs in this workspace.
func BenchmarkAuthorizeBig(b *testing.B) {
	a := newAuthorizer()
	bigWorkspace().load(a, clusterA)
	owner := usr("owner")
	for _, tc := range []struct {
		name  string
		attrs authorizer.AttributesRecord
		want  authorizer.Decision
	}{
		{"first-rule", res(owner, "get", "", "configmaps", "", "ns", "n0-0"), authorizer.DecisionAllow},
		{"last-rule", res(owner, "get", "", "configmaps", "", "ns", "n2-5999"), authorizer.DecisionAllow},
		{"no-rule", res(owner, "delete", "", "configmaps", "", "ns", "n0-0"), authorizer.DecisionNoOpinion},
		{"stranger-access", nonRes(usr("alice"), "access", "/"), authorizer.DecisionNoOpinion},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := in(clusterA)
			for b.Loop() {
				if d, _, _ := a.Authorize(ctx, tc.attrs); d != tc.want {
					b.Fatalf("decision %v, want %v", d, tc.want)
				}
			}
		})
	}
}
