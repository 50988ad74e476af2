package rbac

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/wharfhub/wharf/hub/cluster"
)

// escalationPolicy is a small workspace: view ⊂ edit ⊂ admin, bob has edit
// and alice admin in ns1, carol holds everything cluster-wide, dave may bind
// admin in ns1 and erin may escalate roles in ns1.
func escalationPolicy() policy {
	view := rule("get,list,watch", "", "configmaps", "")
	edit := rule("create,update,delete", "", "configmaps", "")
	admin := rule("*", "rbac.authorization.k8s.io", "roles,rolebindings", "")
	return policy{
		clusterRoles: []*rbacv1.ClusterRole{
			newClusterRole("view", view),
			newClusterRole("edit", view, edit),
			newClusterRole("admin", view, edit, admin),
			newClusterRole("everything", rule("*", "*", "*", ""), rule("*", "", "", "*")),
			newClusterRole("all-resources", rule("*", "*", "*", "")),
			newClusterRole("read-all", rule("get,list,watch", "*", "*", "")),
			newClusterRole("escalate-mine", named(rule("escalate", "rbac.authorization.k8s.io", "clusterroles", ""), "mine")),
		},
		roles: []*rbacv1.Role{
			newRole("ns1", "binder", named(rule("bind", "rbac.authorization.k8s.io", "clusterroles", ""), "admin")),
			newRole("ns1", "escalator", rule("escalate", "rbac.authorization.k8s.io", "roles", "")),
		},
		roleBindings: []*rbacv1.RoleBinding{
			newRoleBinding("ns1", "bob-edit", "ClusterRole:edit", "User:bob"),
			newRoleBinding("ns1", "alice-admin", "ClusterRole:admin", "User:alice"),
			newRoleBinding("ns1", "dave-bind", "Role:binder", "User:dave"),
			newRoleBinding("ns1", "erin-escalate", "Role:escalator", "User:erin"),
		},
		clusterRoleBindings: []*rbacv1.ClusterRoleBinding{
			newClusterRoleBinding("carol", "everything", "User:carol"),
			newClusterRoleBinding("frank", "all-resources", "User:frank"),
			newClusterRoleBinding("gina", "read-all", "User:gina"),
			newClusterRoleBinding("hank", "escalate-mine", "User:hank"),
		},
	}
}

func clusterRoleRef(name string) rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
}

func TestCheckBinding(t *testing.T) {
	a := newAuthorizer()
	escalationPolicy().load(a, clusterA)
	// Cluster B has the same roles but none of the bindings.
	policy{clusterRoles: escalationPolicy().clusterRoles}.load(a, clusterB)
	c := EscalationChecker{RBAC: a}

	tests := []struct {
		name string
		ctx  context.Context
		ns   string
		ref  rbacv1.RoleRef
		want func(error) bool
	}{
		{"edit cannot grant admin", asUser(clusterA, "ns1", usr("bob")), "ns1", clusterRoleRef("admin"), apierrors.IsForbidden},
		{"edit can grant view", asUser(clusterA, "ns1", usr("bob")), "ns1", clusterRoleRef("view"), isNil},
		{"edit can grant edit", asUser(clusterA, "ns1", usr("bob")), "ns1", clusterRoleRef("edit"), isNil},
		{"admin can grant admin", asUser(clusterA, "ns1", usr("alice")), "ns1", clusterRoleRef("admin"), isNil},
		{"admin of ns1 cannot grant in ns2", asUser(clusterA, "ns2", usr("alice")), "ns2", clusterRoleRef("view"), apierrors.IsForbidden},
		{"admin of ns1 cannot grant cluster-wide", asUser(clusterA, "", usr("alice")), "", clusterRoleRef("view"), apierrors.IsForbidden},
		{"admin in A is nobody in B", asUser(clusterB, "ns1", usr("alice")), "ns1", clusterRoleRef("view"), apierrors.IsForbidden},
		{"bind verb allows binding", asUser(clusterA, "ns1", usr("dave")), "ns1", clusterRoleRef("admin"), isNil},
		{"bind verb is per namespace", asUser(clusterA, "ns2", usr("dave")), "ns2", clusterRoleRef("admin"), apierrors.IsForbidden},
		{"bind verb is per role name", asUser(clusterA, "ns1", usr("dave")), "ns1", clusterRoleRef("edit"), apierrors.IsForbidden},
		{"cluster-wide holder grants cluster-wide", asUser(clusterA, "", usr("carol")), "", clusterRoleRef("admin"), isNil},
		{"missing role is not found", asUser(clusterA, "ns1", usr("bob")), "ns1", clusterRoleRef("nope"), apierrors.IsNotFound},
		{"missing Role in namespace", asUser(clusterA, "ns2", usr("bob")), "ns2",
			rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "binder"}, apierrors.IsNotFound},
		{"system:masters skips the check", asUser(clusterB, "ns1", usr("root", user.SystemPrivilegedGroup)), "ns1", clusterRoleRef("admin"), isNil},
		{"no cluster fails closed", request.WithUser(context.Background(), usr("carol")), "", clusterRoleRef("view"), apierrors.IsForbidden},
		{"wildcard fails closed", request.WithUser(cluster.WithWildcard(in(clusterA)), usr("carol")), "", clusterRoleRef("view"), apierrors.IsForbidden},
		{"no user fails closed", in(clusterA), "ns1", clusterRoleRef("view"), apierrors.IsForbidden},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := c.CheckBinding(tc.ctx, tc.ns, "b", tc.ref); !tc.want(err) {
				t.Errorf("got %v", err)
			}
		})
	}
}

func isNil(err error) bool { return err == nil }

// roleRequest adds the RequestInfo of a request for resource (roles or
// clusterroles) in ns, addressing name ("" for a create).
func roleRequest(ctx context.Context, resource, ns, name string) context.Context {
	return request.WithRequestInfo(ctx, &request.RequestInfo{
		IsResourceRequest: true, APIGroup: rbacv1.GroupName, APIVersion: "v1", Resource: resource, Namespace: ns, Name: name,
	})
}

func TestCheckRoles(t *testing.T) {
	a := newAuthorizer()
	escalationPolicy().load(a, clusterA)
	c := EscalationChecker{RBAC: a}
	cmEdit := []rbacv1.PolicyRule{rule("get,update", "", "configmaps", "")}
	secrets := []rbacv1.PolicyRule{rule("get", "", "secrets", "")}

	tests := []struct {
		name  string
		check func() error
		want  func(error) bool
	}{
		{"Role within own rules", func() error { return c.CheckRole(asUser(clusterA, "ns1", usr("bob")), "ns1", "r", cmEdit) }, isNil},
		{"Role beyond own rules", func() error { return c.CheckRole(asUser(clusterA, "ns1", usr("bob")), "ns1", "r", secrets) }, apierrors.IsForbidden},
		{"Role in a namespace without grants", func() error { return c.CheckRole(asUser(clusterA, "ns2", usr("bob")), "ns2", "r", cmEdit) }, apierrors.IsForbidden},
		{"escalate verb", func() error {
			return c.CheckRole(roleRequest(asUser(clusterA, "ns1", usr("erin")), "roles", "ns1", ""), "ns1", "r", secrets)
		}, isNil},
		{"escalate verb is per namespace", func() error {
			return c.CheckRole(roleRequest(asUser(clusterA, "ns2", usr("erin")), "roles", "ns2", ""), "ns2", "r", secrets)
		}, apierrors.IsForbidden},
		// As upstream, escalate is asked about the request, so a write
		// that is no roles request (in-process) never has it.
		{"escalate verb needs a roles request", func() error { return c.CheckRole(asUser(clusterA, "ns1", usr("erin")), "ns1", "r", secrets) }, apierrors.IsForbidden},
		{"escalate on roles does not cover clusterroles", func() error {
			return c.CheckClusterRole(roleRequest(asUser(clusterA, "", usr("erin")), "clusterroles", "", ""), "cr", secrets, false)
		}, apierrors.IsForbidden},
		{"escalate is asked about the request's name", func() error {
			return c.CheckClusterRole(roleRequest(asUser(clusterA, "", usr("hank")), "clusterroles", "", "mine"), "mine", secrets, true)
		}, isNil},
		{"escalate on one name does not cover another", func() error {
			return c.CheckClusterRole(roleRequest(asUser(clusterA, "", usr("hank")), "clusterroles", "", "other"), "other", secrets, false)
		}, apierrors.IsForbidden},
		{"escalate on one name does not cover a create", func() error {
			return c.CheckClusterRole(roleRequest(asUser(clusterA, "", usr("hank")), "clusterroles", "", ""), "mine", secrets, false)
		}, apierrors.IsForbidden},
		{"aggregationRule refusal says so as upstream", func() error {
			err := c.CheckClusterRole(asUser(clusterA, "", usr("gina")), "cr", nil, true)
			if err == nil || !strings.Contains(err.Error(), "must have cluster-admin privileges to use the aggregationRule") {
				return errors.New("unexpected: " + fmt.Sprint(err))
			}
			return nil
		}, isNil},
		{"ClusterRole needs cluster-wide grants", func() error {
			return c.CheckClusterRole(asUser(clusterA, "", usr("alice")), "cr", cmEdit, false)
		}, apierrors.IsForbidden},
		{"ClusterRole within cluster-wide grants", func() error {
			return c.CheckClusterRole(asUser(clusterA, "", usr("frank")), "cr", secrets, false)
		}, isNil},
		{"aggregationRule needs every permission", func() error {
			return c.CheckClusterRole(asUser(clusterA, "", usr("gina")), "cr", []rbacv1.PolicyRule{rule("get", "", "pods", "")}, true)
		}, apierrors.IsForbidden},
		{"without aggregationRule the same role passes", func() error {
			return c.CheckClusterRole(asUser(clusterA, "", usr("gina")), "cr", []rbacv1.PolicyRule{rule("get", "", "pods", "")}, false)
		}, isNil},
		{"all verbs on all resources include escalate", func() error {
			return c.CheckClusterRole(roleRequest(asUser(clusterA, "", usr("frank")), "clusterroles", "", ""), "cr", nil, true)
		}, isNil},
		{"without a request, all resources lack the non-resource half", func() error {
			return c.CheckClusterRole(asUser(clusterA, "", usr("frank")), "cr", nil, true)
		}, apierrors.IsForbidden},
		{"aggregationRule by a holder of everything", func() error {
			return c.CheckClusterRole(asUser(clusterA, "", usr("carol")), "cr", nil, true)
		}, isNil},
		{"custom privileged group", func() error {
			c := EscalationChecker{RBAC: a, PrivilegedGroups: []string{"wharf:admins"}}
			return c.CheckClusterRole(asUser(clusterA, "", usr("x", "wharf:admins")), "cr", nil, true)
		}, isNil},
		{"a privileged group impersonated (confined) is no privilege", func() error {
			c := EscalationChecker{RBAC: a, PrivilegedGroups: []string{"wharf:admins"}}
			x := &user.DefaultInfo{Name: "x", Groups: []string{"wharf:admins"}, Extra: map[string][]string{cluster.ConfinedExtra: {string(clusterA)}}}
			return c.CheckClusterRole(asUser(clusterA, "", x), "cr", nil, true)
		}, apierrors.IsForbidden},
		{"custom privileged groups replace system:masters", func() error {
			c := EscalationChecker{RBAC: a, PrivilegedGroups: []string{"wharf:admins"}}
			return c.CheckRole(asUser(clusterA, "ns1", usr("x", user.SystemPrivilegedGroup)), "ns1", "r", secrets)
		}, apierrors.IsForbidden},
		{"chain authorizer answers escalate", func() error {
			chain := authorizer.AuthorizerFunc(func(_ context.Context, at authorizer.Attributes) (authorizer.Decision, string, error) {
				if at.GetVerb() == "escalate" && at.GetUser().GetName() == "hub-admin" {
					return authorizer.DecisionAllow, "", nil
				}
				return authorizer.DecisionNoOpinion, "", nil
			})
			c := EscalationChecker{RBAC: a, Authorizer: chain}
			return c.CheckRole(roleRequest(asUser(clusterA, "ns1", usr("hub-admin")), "roles", "ns1", "r"), "ns1", "r", secrets)
		}, isNil},
		{"no RBAC authorizer is an internal error", func() error {
			return EscalationChecker{}.CheckRole(asUser(clusterA, "ns1", usr("bob")), "ns1", "r", nil)
		}, apierrors.IsInternalError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.check(); !tc.want(err) {
				t.Errorf("got %v", err)
			}
		})
	}
}

// TestConfirmNoEscalation checks the bare helper: namespace from ctx, and an
// error that lists what is missing.
func TestConfirmNoEscalation(t *testing.T) {
	a := newAuthorizer()
	escalationPolicy().load(a, clusterA)
	want := []rbacv1.PolicyRule{rule("get,delete", "", "configmaps,secrets", "")}

	err := a.ConfirmNoEscalation(asUser(clusterA, "ns1", usr("bob")), want)
	var esc *EscalationError
	if !errors.As(err, &esc) {
		t.Fatalf("got %v, want an *EscalationError", err)
	}
	if len(esc.Missing) != 2 || !strings.Contains(err.Error(), `Resources:["secrets"]`) || !strings.Contains(err.Error(), `"bob"`) {
		t.Errorf("missing %v, message %q: want the two secrets rules named", esc.Missing, err)
	}
	if err := a.ConfirmNoEscalation(asUser(clusterA, "ns1", usr("bob")), want[:0]); err != nil {
		t.Errorf("empty rules: %v", err)
	}
	if err := a.ConfirmNoEscalation(asUser(clusterA, "", usr("bob")), []rbacv1.PolicyRule{rule("get", "", "configmaps", "")}); err == nil {
		t.Errorf("bob's grant is in ns1 only; cluster-wide check should fail")
	}
}
