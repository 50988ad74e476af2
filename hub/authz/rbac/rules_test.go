package rbac

import (
	"context"
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/wharfhub/wharf/hub/cluster"
)

// TestRulesFor checks what SelfSubjectRulesReview sees: cluster-wide grants
// plus the namespace's, from the request cluster only, each binding once.
func TestRulesFor(t *testing.T) {
	a := newAuthorizer()
	p := policy{
		roles: []*rbacv1.Role{newRole("ns1", "cm", rule("get", "", "configmaps", ""))},
		clusterRoles: []*rbacv1.ClusterRole{
			newClusterRole("urls", rule("get", "", "", "/healthz")),
			newClusterRole("ws", rule("list", "tenancy.wharf.dev", "workspaces", "")),
		},
		roleBindings: []*rbacv1.RoleBinding{newRoleBinding("ns1", "cm", "Role:cm", "User:alice", "Group:devs")},
		clusterRoleBindings: []*rbacv1.ClusterRoleBinding{
			newClusterRoleBinding("urls", "urls", "Group:devs"),
			// Names alice twice: must still count once.
			newClusterRoleBinding("ws", "ws", "User:alice", "Group:devs"),
		},
	}
	p.load(a, clusterA)
	policy{
		clusterRoles:        p.clusterRoles,
		clusterRoleBindings: []*rbacv1.ClusterRoleBinding{newClusterRoleBinding("b-only", "urls", "User:alice")},
	}.load(a, clusterB)
	alice := usr("alice", "devs")

	tests := []struct {
		name       string
		ctx        context.Context
		ns         string
		res, urls  int
		incomplete bool
		wantErr    bool
	}{
		{name: "namespace", ctx: in(clusterA), ns: "ns1", res: 2, urls: 1},
		{name: "cluster-wide only", ctx: in(clusterA), ns: "", res: 1, urls: 1},
		{name: "other namespace", ctx: in(clusterA), ns: "ns2", res: 1, urls: 1},
		{name: "other cluster", ctx: in(clusterB), ns: "ns1", res: 0, urls: 1},
		{name: "no cluster", ctx: context.Background(), ns: "ns1", incomplete: true, wantErr: true},
		{name: "wildcard", ctx: cluster.WithWildcard(context.Background()), ns: "ns1", incomplete: true, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, u, incomplete, err := a.RulesFor(tc.ctx, alice, tc.ns)
			if len(r) != tc.res || len(u) != tc.urls || incomplete != tc.incomplete || (err != nil) != tc.wantErr {
				t.Errorf("got %d resource rules, %d URL rules, incomplete=%v, err=%v; want %d, %d, %v, error=%v",
					len(r), len(u), incomplete, err, tc.res, tc.urls, tc.incomplete, tc.wantErr)
			}
		})
	}

	r, _, _, _ := a.RulesFor(in(clusterA), alice, "ns1")
	want := []authorizer.ResourceRuleInfo{
		&authorizer.DefaultResourceRuleInfo{Verbs: []string{"list"}, APIGroups: []string{"tenancy.wharf.dev"}, Resources: []string{"workspaces"}},
		&authorizer.DefaultResourceRuleInfo{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}},
	}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("rules in order: got %+v, want %+v", r, want)
	}
}

// TestRulesForNotSynced checks an authorizer whose informers have not synced
// reports incomplete rules and decides nothing.
func TestRulesForNotSynced(t *testing.T) {
	a := newAuthorizer()
	policy{
		clusterRoles:        []*rbacv1.ClusterRole{newClusterRole("all", rule("*", "*", "*", "*"))},
		clusterRoleBindings: []*rbacv1.ClusterRoleBinding{newClusterRoleBinding("b", "all", "User:alice")},
	}.load(a, clusterA)
	a.synced = append(a.synced, func() bool { return false })

	if _, _, incomplete, err := a.RulesFor(in(clusterA), usr("alice"), ""); !incomplete || err == nil {
		t.Errorf("RulesFor before sync: incomplete=%v err=%v, want true and an error", incomplete, err)
	}
	if d, _, _ := a.Authorize(in(clusterA), res(usr("alice"), "get", "", "pods", "", "", "")); d != authorizer.DecisionNoOpinion {
		t.Errorf("Authorize before sync: got %v, want no opinion", d)
	}
}
