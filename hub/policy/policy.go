// Package policy defines the RBAC objects every workspace starts with.
//
// The ClusterRoles admin, edit and view mean, within one workspace, what
// they mean in a Kubernetes cluster. Like upstream they aggregate: a
// ClusterRole labelled rbac.authorization.k8s.io/aggregate-to-<role>: "true"
// in the same workspace extends them, which is how custom resources join.
// The built-in rules come from the wharf:aggregate-to-<role> roles.
//
// Whoever creates a workspace is bound to admin in it. Nothing is inherited
// from the parent: being admin of root:acme grants nothing in
// root:acme:team-a, as in kcp.
//
// Non-resource paths: a workspace's RBAC governs only WorkspaceURLs
// (upstream's discovery and public-info paths). Everything else without a
// resource, /metrics, /debug/*, /logs and the rest, belongs to the hub
// process and only hub administrators reach it, so admin's
// nonResourceURLs "*" means "every path of this workspace".
package policy

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/wharfhub/wharf/hub/cluster"
)

// Names of the bootstrap objects.
const (
	Admin           = "admin"
	Edit            = "edit"
	View            = "view"
	WorkspaceAccess = "wharf:workspace-access"
	OwnerBinding    = "wharf:workspace-owner"
	aggregateLabel  = "rbac.authorization.k8s.io/aggregate-to-"
)

var (
	readVerbs  = []string{"get", "list", "watch"}
	writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection"}
	allVerbs   = append(append([]string{}, readVerbs...), writeVerbs...)
)

// DiscoveryURLs are the non-resource paths of upstream's system:discovery
// role: the API's self-description, which a workspace serves for itself.
func DiscoveryURLs() []string {
	return []string{"/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", "/version", "/version/"}
}

// PublicInfoURLs are those of upstream's system:public-info-viewer. The
// health endpoints' sub-paths (/readyz/etcd, ...) are not among them, as
// upstream: they expose the state of the hub process.
func PublicInfoURLs() []string {
	return []string{"/healthz", "/livez", "/readyz", "/version", "/version/"}
}

// IssuerDiscoveryURLs are those of upstream's
// system:service-account-issuer-discovery role: the service-account
// issuer's OpenID configuration and keys. They are the same in every
// workspace (the issuer is hub-wide), public knowledge for verifiers, so
// a workspace's RBAC may grant them; service accounts hold them by
// default, as upstream binds the role to system:serviceaccounts.
func IssuerDiscoveryURLs() []string {
	return []string{"/.well-known/openid-configuration", "/.well-known/openid-configuration/", "/openid/v1/jwks", "/openid/v1/jwks/"}
}

// WorkspaceURLs are the only non-resource paths that mean something per
// workspace. Every other one (/metrics, /debug/*, /logs, /flagz, /statusz,
// the path index "/", whatever a library adds later) is about the hub
// process and is for hub administrators only, whatever a workspace's RBAC
// grants (hub/server's process-wide guard).
func WorkspaceURLs() []string {
	return append(DiscoveryURLs(), PublicInfoURLs()...)
}

// AccessVerb on AccessPath is the workspace-content check (kcp's): no HTTP
// request carries this verb; the hub asks it in-process.
const (
	AccessVerb = "access"
	AccessPath = "/"
)

func rule(verbs []string, group string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: []string{group}, Resources: resources}
}

// aggregated returns a role whose rules are the union of every ClusterRole
// labelled aggregate-to-<name>.
func aggregated(name string) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
			{MatchLabels: map[string]string{aggregateLabel + name: "true"}},
		}},
	}
}

// part is a role that feeds the aggregated role into.
func part(into string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "wharf:aggregate-to-" + into, Labels: map[string]string{aggregateLabel + into: "true"}},
		Rules:      rules,
	}
}

// ClusterRoles returns the bootstrap ClusterRoles of a workspace.
func ClusterRoles() []*rbacv1.ClusterRole {
	discovery := rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: DiscoveryURLs()}
	// "access" on "/" lets a subject use the workspace through provider
	// backends (kcp's workspace-content check); every role that grants
	// anything in the workspace includes it.
	access := rbacv1.PolicyRule{Verbs: []string{AccessVerb}, NonResourceURLs: []string{AccessPath}}
	selfReviews := []rbacv1.PolicyRule{
		rule([]string{"create"}, "authorization.k8s.io", "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
		rule([]string{"create"}, "authentication.k8s.io", "selfsubjectreviews"),
	}
	return []*rbacv1.ClusterRole{
		aggregated(Admin), aggregated(Edit), aggregated(View),
		part(View,
			access,
			rule(readVerbs, "", "configmaps", "serviceaccounts", "namespaces"),
			rule(readVerbs, "coordination.k8s.io", "leases"),
			rule(readVerbs, "tenancy.wharf.dev", "workspaces"),
		),
		// edit: read and write workload data, including Secrets, but not
		// access control: it cannot grant itself more.
		part(Edit,
			access,
			rule(readVerbs, "", "configmaps", "serviceaccounts", "namespaces", "secrets"),
			rule(writeVerbs, "", "configmaps", "serviceaccounts", "secrets"),
			// As upstream's edit: minting a token is acting as the
			// ServiceAccount, which edit can already configure.
			rule([]string{"create"}, "", "serviceaccounts/token"),
			rule(allVerbs, "coordination.k8s.io", "leases"),
			rule(readVerbs, "tenancy.wharf.dev", "workspaces"),
		),
		// admin owns the workspace: everything in it, access control and
		// child workspaces included. nonResourceURLs "*" stays, as on
		// upstream's cluster-admin: it makes admin hold full authority,
		// which creating an aggregated ClusterRole requires, and it reaches
		// only the per-workspace paths (WorkspaceURLs), because the hub
		// refuses every other non-resource path to all but hub
		// administrators before RBAC is asked.
		part(Admin,
			rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
			rbacv1.PolicyRule{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
		),
		{ObjectMeta: metav1.ObjectMeta{Name: WorkspaceAccess}, Rules: append([]rbacv1.PolicyRule{discovery, access}, selfReviews...)},
	}
}

// Stores are the RBAC storages Ensure writes through.
type Stores struct {
	ClusterRoles        rest.Creater
	ClusterRoleBindings rest.Creater
}

// Ensure creates the bootstrap ClusterRoles in a logical cluster and, when
// owner is set, binds the owner to admin. Existing objects are left alone:
// a workspace admin may have changed them.
func Ensure(ctx context.Context, s Stores, id cluster.ID, owner user.Info) error {
	// The hub writes these itself, not the requesting user: the owner
	// cannot yet hold admin, which escalation checks would demand.
	ctx = request.WithUser(ctx, &user.DefaultInfo{Name: "system:wharf:bootstrap", Groups: []string{user.SystemPrivilegedGroup}})
	ctx = request.WithNamespace(cluster.WithCluster(ctx, id), metav1.NamespaceNone)
	var objs []runtime.Object
	for _, r := range ClusterRoles() {
		objs = append(objs, r)
	}
	if err := create(ctx, s.ClusterRoles, objs); err != nil {
		return err
	}
	if owner == nil || owner.GetName() == "" {
		return nil
	}
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: OwnerBinding},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: owner.GetName()}},
		RoleRef:    rbacv1.RoleRef{Kind: "ClusterRole", APIGroup: rbacv1.GroupName, Name: Admin},
	}
	return create(ctx, s.ClusterRoleBindings, []runtime.Object{b})
}

func create(ctx context.Context, c rest.Creater, objs []runtime.Object) error {
	for _, o := range objs {
		if _, err := c.Create(ctx, o, rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating bootstrap RBAC: %w", err)
		}
	}
	return nil
}
