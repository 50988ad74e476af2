package rbac

import (
	"context"
	"errors"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/component-helpers/auth/rbac/validation"

	"github.com/wharfhub/wharf/hub/cluster"
)

// EscalationError says which requested rules the caller does not hold.
type EscalationError struct {
	User    string
	Groups  []string
	Missing []rbacv1.PolicyRule
	// Resolution carries errors met while gathering the caller's own rules
	// (for example a binding to a missing role); they may explain a refusal.
	Resolution error
}

func (e *EscalationError) Error() string {
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s",
		e.User, e.Groups, describeRules(e.Missing))
	if e.Resolution != nil {
		msg += fmt.Sprintf("; resolution errors: %v", e.Resolution)
	}
	return msg
}

// ConfirmNoEscalation returns an *EscalationError unless the user in ctx
// already holds every one of rules in the cluster of ctx, counting grants in
// the namespace of ctx (request.NamespaceFrom) plus cluster-wide ones. It
// does not consult the escalate or bind verbs; EscalationChecker does.
// Callers turn the error into a 403 with apierrors.NewForbidden.
func (a *Authorizer) ConfirmNoEscalation(ctx context.Context, rules []rbacv1.PolicyRule) error {
	ns, _ := request.NamespaceFrom(ctx)
	return a.confirmNoEscalation(ctx, ns, rules)
}

func (a *Authorizer) confirmNoEscalation(ctx context.Context, namespace string, rules []rbacv1.PolicyRule) error {
	u, ok := request.UserFrom(ctx)
	if !ok {
		return errors.New("rbac: no user on context")
	}
	// Rule resolution errors are not fatal: the rules found are still held.
	// A hard failure (no cluster, index not synced) yields no rules, so
	// anything non-empty is refused, which is the fail-closed outcome.
	held, resolveErr := a.Rules(ctx, u, namespace)
	covered, missing := validation.Covers(held, rules)
	if covered {
		return nil
	}
	return &EscalationError{User: u.GetName(), Groups: u.GetGroups(), Missing: missing, Resolution: resolveErr}
}

// RoleRefRules resolves a binding's roleRef in the cluster of ctx, as the
// authorizer would: a Role in namespace, or a ClusterRole (with aggregation
// applied). namespace is "" for a ClusterRoleBinding.
func (a *Authorizer) RoleRefRules(ctx context.Context, ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	id, why := requestCluster(ctx)
	if why != "" {
		return nil, errors.New(why)
	}
	if !a.HasSynced() {
		return nil, errors.New("RBAC: policy index not synced yet")
	}
	var (
		rules []rbacv1.PolicyRule
		// A cluster with no RBAC objects has no partition: nothing to find.
		err error = apierrors.NewNotFound(rbacv1.Resource(roleResource(ref.Kind)), ref.Name)
	)
	a.idx.read(id, func(ci *clusterIndex) {
		var lists [][]rbacv1.PolicyRule
		lists, err = ci.roleRefRules(ref, namespace)
		rules = flatten(lists)
	})
	return rules, err
}

func roleResource(kind string) string {
	if kind == "Role" {
		return "roles"
	}
	return "clusterroles"
}

// hubPrivileged reports whether u is one of the hub's administrators:
// named in users or in any of groups, and not confined to a workspace. A
// confined identity (impersonated, or a service account) acts in its
// workspace alone and is never a hub administrator, whatever name or
// groups it carries: a workspace admin may impersonate an administrator's
// name or group there as any other (hub/server, admins.has).
func hubPrivileged(u user.Info, users, groups []string) bool {
	if _, confined := cluster.ConfinedTo(u); confined {
		return false
	}
	return slices.Contains(users, u.GetName()) || hasGroup(u, groups)
}

// hasGroup reports whether u is in any of groups.
func hasGroup(u user.Info, groups []string) bool {
	for _, g := range u.GetGroups() {
		if slices.Contains(groups, g) {
			return true
		}
	}
	return false
}

// authorized asks az about one synthetic request of the user in ctx. Only an
// explicit Allow counts; errors and NoOpinion mean "no".
func authorized(ctx context.Context, az authorizer.Authorizer, attrs authorizer.AttributesRecord) bool {
	u, ok := request.UserFrom(ctx)
	if !ok || az == nil {
		return false
	}
	attrs.User = u
	attrs.ResourceRequest = true
	attrs.APIVersion = "*"
	d, _, _ := az.Authorize(ctx, attrs)
	return d == authorizer.DecisionAllow
}
