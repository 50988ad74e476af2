package rbac

import (
	"fmt"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/wharfhub/wharf/hub/cluster"
)

// benchPolicy resembles a bootstrapped workspace: view, edit and admin
// aggregated from labelled parts, the owner bound to admin, a few members
// bound in namespaces, and a group binding for workspace access.
func benchPolicy() policy {
	part := func(name string, labels map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
		return labelled(newClusterRole(name, rules...), labels)
	}
	p := policy{
		clusterRoles: []*rbacv1.ClusterRole{
			aggregating("view", toView),
			labelled(aggregating("edit", toEdit), toAdmin),
			aggregating("admin", toAdmin),
			part("view-core", toView, rule("get,list,watch", "", "configmaps,namespaces,serviceaccounts", "")),
			part("view-coord", toView, rule("get,list,watch", "coordination.k8s.io", "leases", "")),
			part("edit-core", toEdit, rule("create,update,patch,delete", "", "configmaps,secrets,serviceaccounts", "")),
			part("admin-rbac", toAdmin, rule("*", "rbac.authorization.k8s.io", "roles,rolebindings", "")),
			newClusterRole("wharf:workspace-access", rule("get", "", "", "/,/version")),
		},
		clusterRoleBindings: []*rbacv1.ClusterRoleBinding{
			newClusterRoleBinding("owner", "admin", "User:owner"),
			newClusterRoleBinding("access", "wharf:workspace-access", "Group:system:authenticated"),
		},
	}
	for i := range 5 {
		ns := fmt.Sprintf("ns%d", i)
		p.roleBindings = append(p.roleBindings,
			newRoleBinding(ns, "viewers", "ClusterRole:view", "Group:viewers", fmt.Sprintf("User:member%d", i)),
			newRoleBinding(ns, "editors", "ClusterRole:edit", "Group:editors", "ServiceAccount:ns0/deployer"))
	}
	return p
}

// BenchmarkAuthorize compares decisions per second with one workspace and
// with 10,000 workspaces holding the same bindings. The request always
// targets one workspace, so the two should be close: cost depends on the
// caller's bindings in that workspace, not on the number of workspaces.
func BenchmarkAuthorize(b *testing.B) {
	member := usr("member3", "system:authenticated")
	stranger := usr("stranger", "system:authenticated")
	requests := []struct {
		name  string
		attrs authorizer.AttributesRecord
		want  authorizer.Decision
	}{
		{"allow-namespaced", res(member, "get", "", "configmaps", "", "ns3", "c"), authorizer.DecisionAllow},
		{"allow-aggregated-owner", res(usr("owner", "system:authenticated"), "create", "rbac.authorization.k8s.io", "rolebindings", "", "ns1", ""), authorizer.DecisionAllow},
		{"deny-member", res(member, "delete", "", "secrets", "", "ns3", "s"), authorizer.DecisionNoOpinion},
		{"deny-stranger", res(stranger, "get", "", "configmaps", "", "ns3", "c"), authorizer.DecisionNoOpinion},
	}
	counts := []int{1, 10_000}
	rate := map[string]float64{} // "n/request" → decisions/s of the last run
	for _, n := range counts {
		a := newAuthorizer()
		p := benchPolicy()
		var target cluster.ID
		for i := range n {
			id := cluster.ID(fmt.Sprintf("c%015d", i))
			p.load(a, id)
			if i == n/2 {
				target = id
			}
		}
		ctx := in(target)
		for _, r := range requests {
			b.Run(fmt.Sprintf("clusters=%d/%s", n, r.name), func(b *testing.B) {
				if d, reason, _ := a.Authorize(ctx, r.attrs); d != r.want {
					b.Fatalf("got %v (%s), want %v", d, reason, r.want)
				}
				b.ReportAllocs()
				for b.Loop() {
					_, _, _ = a.Authorize(ctx, r.attrs)
				}
				perSec := float64(b.N) / b.Elapsed().Seconds()
				b.ReportMetric(perSec, "decisions/s")
				rate[fmt.Sprintf("%d/%s", n, r.name)] = perSec
			})
		}
	}
	// The ratio the issue asks for: near 1.0 means the number of workspaces
	// does not matter.
	for _, r := range requests {
		few, many := rate[fmt.Sprintf("%d/%s", counts[0], r.name)], rate[fmt.Sprintf("%d/%s", counts[1], r.name)]
		if few > 0 && many > 0 {
			b.Logf("%s: %.0f decisions/s with %d cluster(s), %.0f with %d; ratio %.2f",
				r.name, few, counts[0], many, counts[1], many/few)
		}
	}
}
