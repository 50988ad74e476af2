package rbac

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
)

func TestBinds(t *testing.T) {
	a := newAuthorizer()
	policy{
		roleBindings:        []*rbacv1.RoleBinding{newRoleBinding("ns1", "rb", "ClusterRole:view", "User:alice", "ServiceAccount:ns1/bot")},
		clusterRoleBindings: []*rbacv1.ClusterRoleBinding{newClusterRoleBinding("crb", "view", "Group:devs")},
	}.load(a, clusterA)
	tests := []struct {
		name string
		ctx  context.Context
		u    user.Info
		want bool
	}{
		{"user named by a RoleBinding", in(clusterA), usr("alice"), true},
		{"group named by a ClusterRoleBinding", in(clusterA), usr("bob", "devs"), true},
		{"service account named by a RoleBinding", in(clusterA), usr("system:serviceaccount:ns1:bot"), true},
		{"nobody names the user", in(clusterA), usr("carol", "others"), false},
		{"another cluster", in(clusterB), usr("alice", "devs"), false},
		{"no cluster", context.Background(), usr("alice"), false},
		{"no user", in(clusterA), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := a.Binds(tt.ctx, tt.u); got != tt.want {
				t.Errorf("Binds = %v, want %v", got, tt.want)
			}
		})
	}
}
