package rbac

import (
	"context"
	"errors"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/wharfhub/wharf/hub/cluster"
)

// TestAuthorizer ports the upstream authorizer table and adds a cluster
// dimension: each policy is loaded into cluster A, while cluster B holds the
// same roles bound to someone else. Whatever A allows must be NoOpinion in B,
// without a cluster, and with a wildcard context.
func TestAuthorizer(t *testing.T) {
	admin, joe := usr("admin"), usr("joe", "admins")
	tests := []struct {
		name  string
		p     policy
		allow []authorizer.AttributesRecord
		deny  []authorizer.AttributesRecord
	}{
		{
			name: "clusterrole bound in one namespace",
			p: policy{
				clusterRoles: []*rbacv1.ClusterRole{newClusterRole("admin", rule("*", "*", "*", "*"))},
				roleBindings: []*rbacv1.RoleBinding{newRoleBinding("ns1", "b", "ClusterRole:admin", "User:admin", "Group:admins")},
			},
			allow: []authorizer.AttributesRecord{
				res(admin, "get", "", "Pods", "", "ns1", ""),
				res(admin, "watch", "", "Pods", "", "ns1", ""),
				res(usr("admin", "group1"), "watch", "", "Foobar", "", "ns1", ""),
				res(joe, "watch", "", "Foobar", "", "ns1", ""),
				res(usr("joe", "group1", "admins"), "watch", "", "Foobar", "", "ns1", ""),
			},
			deny: []authorizer.AttributesRecord{
				res(admin, "GET", "", "Pods", "", "ns2", ""),
				res(admin, "GET", "", "Nodes", "", "", ""),
				res(usr("admin", "admins"), "GET", "", "Pods", "", "ns2", ""),
				res(usr("admin", "admins"), "GET", "", "Nodes", "", "", ""),
				// A namespaced grant never reaches cluster-wide or URL requests.
				nonRes(admin, "get", "/apis"),
			},
		},
		{
			name: "non-resource URLs",
			p: policy{
				clusterRoles: []*rbacv1.ClusterRole{
					newClusterRole("url-getter", rule("get", "", "", "/apis")),
					newClusterRole("url-all-verbs", rule("*", "", "", "/apis")),
					newClusterRole("url-prefix", rule("get", "", "", "/apis/*")),
				},
				clusterRoleBindings: []*rbacv1.ClusterRoleBinding{
					newClusterRoleBinding("b1", "url-getter", "User:foo", "Group:bar"),
					newClusterRoleBinding("b2", "url-all-verbs", "User:admin", "Group:admin"),
					newClusterRoleBinding("b3", "url-prefix", "User:prefixed", "Group:prefixed"),
				},
			},
			allow: []authorizer.AttributesRecord{
				nonRes(usr("foo"), "get", "/apis"),
				nonRes(usr("", "bar"), "get", "/apis"),
				nonRes(admin, "get", "/apis"),
				nonRes(usr("", "admin"), "get", "/apis"),
				nonRes(admin, "watch", "/apis"),
				nonRes(usr("", "admin"), "watch", "/apis"),
				nonRes(usr("prefixed"), "get", "/apis/v1"),
				nonRes(usr("", "prefixed"), "get", "/apis/v1"),
				nonRes(usr("prefixed"), "get", "/apis/v1/foobar"),
			},
			deny: []authorizer.AttributesRecord{
				nonRes(usr("foo"), "watch", "/apis"),
				nonRes(usr("", "bar"), "watch", "/apis"),
				nonRes(usr("foo"), "get", "/api/v1"),
				nonRes(admin, "get", "/api/v1"),
				nonRes(usr("", "admin"), "get", "/api/v1"),
				nonRes(usr("prefixed"), "get", "/api/v1"),
				nonRes(usr("prefixed"), "get", "/apis"),
			},
		},
		{
			name: "resource rule does not grant subresource",
			p: policy{
				clusterRoles: []*rbacv1.ClusterRole{newClusterRole("pods", rule("*", "*", "pods", "*"))},
				roleBindings: []*rbacv1.RoleBinding{newRoleBinding("ns1", "b", "ClusterRole:pods", "User:admin")},
			},
			allow: []authorizer.AttributesRecord{res(admin, "get", "", "pods", "", "ns1", "")},
			deny:  []authorizer.AttributesRecord{res(admin, "get", "", "pods", "status", "ns1", "")},
		},
		{
			name: "subresource rules",
			p: policy{
				clusterRoles: []*rbacv1.ClusterRole{newClusterRole("sub",
					rule("*", "*", "pods/status", "*"),
					rule("*", "*", "*/scale", "*"),
				)},
				roleBindings: []*rbacv1.RoleBinding{newRoleBinding("ns1", "b", "ClusterRole:sub", "User:admin")},
			},
			allow: []authorizer.AttributesRecord{
				res(admin, "get", "", "pods", "status", "ns1", ""),
				res(admin, "get", "", "pods", "scale", "ns1", ""),
				res(admin, "get", "apps", "deployments", "scale", "ns1", ""),
				res(admin, "get", "", "anything", "scale", "ns1", ""),
			},
			deny: []authorizer.AttributesRecord{res(admin, "get", "", "pods", "", "ns1", "")},
		},
		{
			name: "resourceNames",
			p: policy{
				roles:        []*rbacv1.Role{newRole("ns1", "one-cm", named(rule("get,update", "", "configmaps", ""), "mine"))},
				roleBindings: []*rbacv1.RoleBinding{newRoleBinding("ns1", "b", "Role:one-cm", "User:admin")},
			},
			allow: []authorizer.AttributesRecord{
				res(admin, "get", "", "configmaps", "", "ns1", "mine"),
				res(admin, "update", "", "configmaps", "", "ns1", "mine"),
			},
			deny: []authorizer.AttributesRecord{
				res(admin, "get", "", "configmaps", "", "ns1", "other"),
				res(admin, "list", "", "configmaps", "", "ns1", ""),
				res(admin, "delete", "", "configmaps", "", "ns1", "mine"),
				res(admin, "get", "", "configmaps", "", "ns2", "mine"),
			},
		},
		{
			name: "Role resolves in the binding's namespace only",
			p: policy{
				roles: []*rbacv1.Role{newRole("ns1", "reader", rule("get", "", "secrets", ""))},
				roleBindings: []*rbacv1.RoleBinding{
					newRoleBinding("ns1", "ok", "Role:reader", "User:admin"),
					// ns2 has no Role "reader": this binding grants nothing.
					newRoleBinding("ns2", "dangling", "Role:reader", "User:joe"),
				},
			},
			allow: []authorizer.AttributesRecord{res(admin, "get", "", "secrets", "", "ns1", "x")},
			deny: []authorizer.AttributesRecord{
				res(usr("joe"), "get", "", "secrets", "", "ns2", "x"),
				res(usr("joe"), "get", "", "secrets", "", "ns1", "x"),
				res(admin, "get", "", "secrets", "", "ns2", "x"),
			},
		},
		{
			name: "ServiceAccount subjects",
			p: policy{
				clusterRoles: []*rbacv1.ClusterRole{
					newClusterRole("cm-reader", rule("get,list", "", "configmaps", "")),
					newClusterRole("url", rule("get", "", "", "/version")),
				},
				roleBindings: []*rbacv1.RoleBinding{
					// No namespace on the subject: defaults to the binding's.
					newRoleBinding("ns1", "local", "ClusterRole:cm-reader", "ServiceAccount:bot"),
					newRoleBinding("ns2", "remote", "ClusterRole:cm-reader", "ServiceAccount:ns1/bot"),
					newRoleBinding("ns3", "all-sas-of-ns1", "ClusterRole:cm-reader", "Group:system:serviceaccounts:ns1"),
				},
				clusterRoleBindings: []*rbacv1.ClusterRoleBinding{
					newClusterRoleBinding("sa-url", "url", "ServiceAccount:ns1/bot"),
					// A ServiceAccount without a namespace in a cluster
					// binding matches nobody.
					newClusterRoleBinding("sa-no-ns", "cm-reader", "ServiceAccount:bot"),
					newClusterRoleBinding("all-sas", "url", "Group:system:serviceaccounts"),
				},
			},
			allow: []authorizer.AttributesRecord{
				res(sa("ns1", "bot"), "get", "", "configmaps", "", "ns1", "x"),
				res(sa("ns1", "bot"), "list", "", "configmaps", "", "ns2", ""),
				res(sa("ns1", "other"), "get", "", "configmaps", "", "ns3", "x"),
				nonRes(sa("ns1", "bot"), "get", "/version"),
				nonRes(sa("ns9", "any"), "get", "/version"),
				// A user whose name is the account's user name is that account.
				res(usr("system:serviceaccount:ns1:bot"), "get", "", "configmaps", "", "ns1", "x"),
			},
			deny: []authorizer.AttributesRecord{
				res(sa("ns2", "bot"), "get", "", "configmaps", "", "ns1", "x"),
				res(sa("ns2", "bot"), "get", "", "configmaps", "", "ns2", "x"),
				res(sa("ns1", "bot"), "get", "", "configmaps", "", "", "x"),
				res(sa("ns1", "bot"), "get", "", "configmaps", "", "ns4", "x"),
				res(sa("ns2", "other"), "get", "", "configmaps", "", "ns3", "x"),
				res(usr("bot"), "get", "", "configmaps", "", "ns1", "x"),
				nonRes(usr("bot"), "get", "/version"),
			},
		},
		{
			name: "cluster-wide grant reaches every namespace",
			p: policy{
				clusterRoles:        []*rbacv1.ClusterRole{newClusterRole("view", rule("get,list,watch", "", "configmaps", ""))},
				clusterRoleBindings: []*rbacv1.ClusterRoleBinding{newClusterRoleBinding("b", "view", "Group:viewers")},
			},
			allow: []authorizer.AttributesRecord{
				res(usr("v", "viewers"), "list", "", "configmaps", "", "", ""),
				res(usr("v", "viewers"), "get", "", "configmaps", "", "any", "x"),
			},
			deny: []authorizer.AttributesRecord{res(usr("v", "viewers"), "create", "", "configmaps", "", "any", "")},
		},
	}

	ctxs := map[string]context.Context{
		"cluster B":               in(clusterB),
		"no cluster":              context.Background(),
		"wildcard":                cluster.WithWildcard(context.Background()),
		"wildcard with a cluster": cluster.WithWildcard(in(clusterA)),
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newAuthorizer()
			tc.p.load(a, clusterA)
			tc.p.rebound("mallory").load(a, clusterB)

			for _, attrs := range tc.allow {
				if d, reason, _ := a.Authorize(in(clusterA), attrs); d != authorizer.DecisionAllow {
					t.Errorf("cluster A: want allow for %s, got %v (%s)", describe(attrs), d, reason)
				} else if !strings.HasPrefix(reason, "RBAC: allowed by ") {
					t.Errorf("allow reason %q does not name the binding", reason)
				}
				for name, ctx := range ctxs {
					if d, _, _ := a.Authorize(ctx, attrs); d != authorizer.DecisionNoOpinion {
						t.Errorf("%s: want no opinion for %s, got %v", name, describe(attrs), d)
					}
				}
			}
			for _, attrs := range tc.deny {
				if d, _, _ := a.Authorize(in(clusterA), attrs); d != authorizer.DecisionNoOpinion {
					t.Errorf("cluster A: want no opinion for %s, got %v", describe(attrs), d)
				}
			}
		})
	}
}

// TestAuthorizeEdges covers inputs outside the rule tables.
func TestAuthorizeEdges(t *testing.T) {
	a := newAuthorizer()
	policy{
		clusterRoleBindings: []*rbacv1.ClusterRoleBinding{newClusterRoleBinding("b", "missing", "User:alice")},
	}.load(a, clusterA)

	d, reason, err := a.Authorize(in(clusterA), res(usr("alice"), "get", "", "pods", "", "", ""))
	if d != authorizer.DecisionNoOpinion || err != nil || !strings.Contains(reason, `"missing" not found`) {
		t.Errorf("dangling roleRef: got %v %q %v, want no opinion naming the missing role", d, reason, err)
	}
	if d, _, err := a.Authorize(in(clusterA), authorizer.AttributesRecord{Verb: "get", Path: "/"}); d != authorizer.DecisionNoOpinion || err == nil {
		t.Errorf("no user: got %v, %v; want no opinion and an error", d, err)
	}
	if d, _, _ := a.Authorize(in("unknowncluster00"), res(usr("alice"), "get", "", "pods", "", "", "")); d != authorizer.DecisionNoOpinion {
		t.Errorf("cluster without RBAC objects: got %v", d)
	}
	cad := a.ConditionsAwareAuthorize(in(clusterA), res(usr("alice"), "get", "", "pods", "", "", ""))
	if !cad.IsNoOpinion() {
		t.Errorf("ConditionsAwareAuthorize: got %+v, want no opinion", cad)
	}
	if d, _, err := a.EvaluateConditions(in(clusterA), cad, nil); d != authorizer.DecisionDeny || !errors.Is(err, authorizer.ErrorConditionEvaluationNotSupported) {
		t.Errorf("EvaluateConditions: got %v, %v; want deny, unsupported", d, err)
	}
}
