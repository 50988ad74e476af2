package rbac

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// fullAuthority is what setting an aggregationRule requires: such a role can
// gather any rule in its cluster, so only someone who holds them all may
// create or change one.
func fullAuthority() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
		{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
	}
}

// EscalationChecker is what the RBAC registry strategies call before a Role,
// ClusterRole, RoleBinding or ClusterRoleBinding is created or updated. A
// write passes when the caller is privileged, is explicitly allowed the
// escalate (roles) or bind (bindings) verb, or already holds every rule the
// object would grant in the cluster of ctx. Otherwise it returns a 403.
//
// The caller should skip the check for updates that only touch the fields
// garbage collection needs (finalizers, ownerReferences), as upstream does.
type EscalationChecker struct {
	// RBAC supplies the caller's own rules and resolves roleRefs.
	RBAC *Authorizer
	// Authorizer answers the escalate and bind checks. It should be the hub's
	// full chain, so grants from any authorizer count; nil means RBAC alone.
	Authorizer authorizer.Authorizer
	// PrivilegedGroups skip all checks; nil means system:masters.
	PrivilegedGroups []string
}

func (c EscalationChecker) privileged(ctx context.Context) bool {
	u, ok := request.UserFrom(ctx)
	if !ok {
		return false
	}
	groups := c.PrivilegedGroups
	if groups == nil {
		groups = []string{user.SystemPrivilegedGroup}
	}
	return hubPrivileged(u, nil, groups)
}

func (c EscalationChecker) authz() authorizer.Authorizer {
	if c.Authorizer != nil {
		return c.Authorizer
	}
	return c.RBAC
}

// CheckRole guards a Role write in namespace.
func (c EscalationChecker) CheckRole(ctx context.Context, namespace, name string, rules []rbacv1.PolicyRule) error {
	if c.RBAC == nil {
		return apierrors.NewInternalError(errNoChecker)
	}
	gr := rbacv1.Resource("roles")
	if c.privileged(ctx) || c.escalateAllowed(ctx) {
		return nil
	}
	if err := c.RBAC.confirmNoEscalation(ctx, namespace, rules); err != nil {
		return apierrors.NewForbidden(gr, name, err)
	}
	return nil
}

// CheckClusterRole guards a ClusterRole write. aggregated must be true when
// the new or, on update, the old object has an aggregationRule.
func (c EscalationChecker) CheckClusterRole(ctx context.Context, name string, rules []rbacv1.PolicyRule, aggregated bool) error {
	if c.RBAC == nil {
		return apierrors.NewInternalError(errNoChecker)
	}
	gr := rbacv1.Resource("clusterroles")
	if c.privileged(ctx) || c.escalateAllowed(ctx) {
		return nil
	}
	// As upstream, the aggregationRule is checked first: an aggregated
	// role's stored rules are the aggregation written back, which a caller
	// without full authority need not hold to be told why.
	if aggregated {
		if err := c.RBAC.confirmNoEscalation(ctx, "", fullAuthority()); err != nil {
			// Upstream's wording; "cluster" is the workspace here.
			return apierrors.NewForbidden(gr, name, errors.New("must have cluster-admin privileges to use the aggregationRule"))
		}
	}
	if err := c.RBAC.confirmNoEscalation(ctx, "", rules); err != nil {
		return apierrors.NewForbidden(gr, name, err)
	}
	return nil
}

// CheckBinding guards a RoleBinding write in namespace, or a
// ClusterRoleBinding write when namespace is "". It passes when the caller
// may bind the referenced role there, or already holds all its rules.
func (c EscalationChecker) CheckBinding(ctx context.Context, namespace, name string, ref rbacv1.RoleRef) error {
	if c.RBAC == nil {
		return apierrors.NewInternalError(errNoChecker)
	}
	gr := rbacv1.Resource("rolebindings")
	if namespace == "" {
		gr = rbacv1.Resource("clusterrolebindings")
	}
	if c.privileged(ctx) || c.bindAllowed(ctx, namespace, ref) {
		return nil
	}
	rules, err := c.RBAC.RoleRefRules(ctx, ref, namespace)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return err
		}
		return apierrors.NewForbidden(gr, name, fmt.Errorf("resolving roleRef: %w", err))
	}
	if err := c.RBAC.confirmNoEscalation(ctx, namespace, rules); err != nil {
		return apierrors.NewForbidden(gr, name, err)
	}
	return nil
}

// escalateAllowed asks whether the caller holds "escalate" on the role the
// request addresses. As upstream, the attributes come from the request, not
// the object: a create (no name in the URL) is covered only by a grant
// without resourceNames, and a request that is not a roles or clusterroles
// request (an in-process write) never is.
func (c EscalationChecker) escalateAllowed(ctx context.Context) bool {
	ri, ok := request.RequestInfoFrom(ctx)
	if !ok || !ri.IsResourceRequest || ri.APIGroup != rbacv1.GroupName || (ri.Resource != "roles" && ri.Resource != "clusterroles") {
		return false
	}
	return authorized(ctx, c.authz(), authorizer.AttributesRecord{
		Verb: "escalate", APIGroup: ri.APIGroup, Resource: ri.Resource, Namespace: ri.Namespace, Name: ri.Name,
	})
}

// bindAllowed asks whether the caller holds "bind" on the referenced role,
// checked in the binding's namespace: a namespaced grant of bind on a
// ClusterRole lets one bind it in that namespace only.
func (c EscalationChecker) bindAllowed(ctx context.Context, namespace string, ref rbacv1.RoleRef) bool {
	var resource string
	switch ref.Kind {
	case "Role":
		resource = "roles"
	case "ClusterRole":
		resource = "clusterroles"
	default:
		return false
	}
	return authorized(ctx, c.authz(), authorizer.AttributesRecord{
		Verb: "bind", APIGroup: ref.APIGroup, Resource: resource, Namespace: namespace, Name: ref.Name,
	})
}

// describeRules renders missing rules for an error message, merging verbs of
// rules that differ only in verb (validation.Covers breaks rules down to one
// verb each) and capping the list so a huge role cannot make a huge error.
func describeRules(rules []rbacv1.PolicyRule) string {
	const maxLines = 20
	type shape struct{ groups, resources, names, urls string }
	var order []shape
	verbs := map[shape][]string{}
	for _, r := range rules {
		s := shape{fmt.Sprintf("%q", r.APIGroups), fmt.Sprintf("%q", r.Resources), fmt.Sprintf("%q", r.ResourceNames), fmt.Sprintf("%q", r.NonResourceURLs)}
		if _, ok := verbs[s]; !ok {
			order = append(order, s)
		}
		for _, v := range r.Verbs {
			if !slices.Contains(verbs[s], v) {
				verbs[s] = append(verbs[s], v)
			}
		}
	}
	var lines []string
	for _, s := range order {
		var b strings.Builder
		b.WriteString("{")
		if s.urls != "[]" {
			fmt.Fprintf(&b, "NonResourceURLs:%s", s.urls)
		} else {
			fmt.Fprintf(&b, "APIGroups:%s, Resources:%s", s.groups, s.resources)
			if s.names != "[]" {
				fmt.Fprintf(&b, ", ResourceNames:%s", s.names)
			}
		}
		fmt.Fprintf(&b, ", Verbs:%q}", verbs[s])
		lines = append(lines, b.String())
	}
	slices.Sort(lines)
	if len(lines) > maxLines {
		lines = append(lines[:maxLines], fmt.Sprintf("... and %d more", len(lines)-maxLines))
	}
	return strings.Join(lines, "\n")
}

var errNoChecker = errors.New("rbac: EscalationChecker has no RBAC authorizer")
