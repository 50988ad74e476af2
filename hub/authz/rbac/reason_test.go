package rbac

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// TestAllowReasons: a decision names the binding, its role and the
// subject that applied, in upstream's words ("RoleBinding "name/namespace"
// ... to User "alice""), which SubjectAccessReview status.reason carries.
func TestAllowReasons(t *testing.T) {
	a := newAuthorizer()
	policy{
		roles:        []*rbacv1.Role{newRole("ns1", "reader", rule("get", "", "configmaps", ""))},
		clusterRoles: []*rbacv1.ClusterRole{newClusterRole("lister", rule("list", "", "secrets", ""))},
		roleBindings: []*rbacv1.RoleBinding{
			newRoleBinding("ns1", "read", "Role:reader", "Group:devs", "User:alice", "ServiceAccount:ci"),
		},
		clusterRoleBindings: []*rbacv1.ClusterRoleBinding{newClusterRoleBinding("list", "lister", "ServiceAccount:ns2/ci")},
	}.load(a, clusterA)
	for _, tc := range []struct {
		name, verb, resource, ns, want string
		groups                         []string
	}{
		{"alice", "get", "configmaps", "ns1", `RBAC: allowed by RoleBinding "read/ns1" of Role "reader" to User "alice"`, nil},
		{"bob", "get", "configmaps", "ns1", `RBAC: allowed by RoleBinding "read/ns1" of Role "reader" to Group "devs"`, []string{"devs"}},
		{"system:serviceaccount:ns1:ci", "get", "configmaps", "ns1", `RBAC: allowed by RoleBinding "read/ns1" of Role "reader" to ServiceAccount "ci/ns1"`, nil},
		{"system:serviceaccount:ns2:ci", "list", "secrets", "", `RBAC: allowed by ClusterRoleBinding "list" of ClusterRole "lister" to ServiceAccount "ci/ns2"`, nil},
	} {
		u := usr(tc.name, tc.groups...)
		_, reason, err := a.Authorize(asUser(clusterA, tc.ns, u), res(u, tc.verb, "", tc.resource, "", tc.ns, ""))
		if err != nil || reason != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, reason, err, tc.want)
		}
	}
}
