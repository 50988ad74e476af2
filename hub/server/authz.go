package server

import (
	"context"
	"errors"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/authz/rbac"
	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/workspaces"
)

// admins are the hub-wide administrators: they may do everything,
// everywhere, including /clusters/*.
type admins struct {
	users  sets.Set[string]
	groups sets.Set[string]
}

// has reports whether u is a hub administrator. Only how the request
// authenticated makes one: an identity confined to a workspace (every
// impersonated identity, every service account) acts in that workspace
// alone and is never a hub administrator, whatever name or groups it
// carries. So a workspace admin may impersonate the name or group of a
// hub administrator there as any other name (review 5, #7: a refusal for
// those names alone told her who the administrators are), and gets only
// what her workspace's RBAC grants that name.
func (a admins) has(u user.Info) bool {
	if u == nil {
		return false
	}
	if _, confined := cluster.ConfinedTo(u); confined {
		return false
	}
	if a.users.Has(u.GetName()) {
		return true
	}
	for _, g := range u.GetGroups() {
		if a.groups.Has(g) {
			return true
		}
	}
	return false
}

func (a admins) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.has(attrs.GetUser()) {
		return authorizer.DecisionAllow, "hub administrator", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// RulesFor reports unlimited rules for administrators, so that
// kubectl auth can-i --list tells them the truth.
func (a admins) RulesFor(_ context.Context, u user.Info, _ string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	if !a.has(u) {
		return nil, nil, false, nil
	}
	return []authorizer.ResourceRuleInfo{&authorizer.DefaultResourceRuleInfo{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
		[]authorizer.NonResourceRuleInfo{&authorizer.DefaultNonResourceRuleInfo{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}, false, nil
}

// workspaceRBAC delegates to the per-workspace RBAC authorizer, which is
// built after the handler chain (it reads the RBAC storage). Until then it
// has no opinion, so only administrators get in: fail closed.
type workspaceRBAC struct {
	rbac     atomic.Pointer[rbac.Authorizer]
	resolver *workspaces.Index
}

// withCluster completes workspace resolution for the authorizer. The
// outermost filter resolves from memory only; when that missed (a workspace
// created a moment ago through another replica), resolve now, after
// authentication, instead of denying.
func (w *workspaceRBAC) withCluster(ctx context.Context) context.Context {
	if t, ok := cluster.TargetFrom(ctx); ok && t.Explicit && !t.IsWildcard() {
		// A workspace named for the first time costs the same whether
		// it exists or not (hub/workspaces asked.go, B-H).
		w.resolver.Asked(ctx, t.Raw)
	}
	if _, ok := cluster.From(ctx); ok || cluster.IsWildcard(ctx) {
		return ctx
	}
	t, ok := cluster.TargetFrom(ctx)
	if !ok || t.IsWildcard() {
		return ctx
	}
	info, err := w.resolver.Resolve(ctx, t.Raw)
	if err != nil {
		// Unresolved: every step then denies as for a missing workspace.
		if !errors.Is(err, workspaces.ErrNotFound) {
			klog.FromContext(ctx).Error(err, "Resolving the request's workspace for authorization", "workspace", t.Raw)
		}
		return ctx
	}
	return cluster.WithCluster(ctx, info.ID)
}

func (w *workspaceRBAC) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	a := w.rbac.Load()
	if a == nil {
		return authorizer.DecisionNoOpinion, "RBAC not started", nil
	}
	return a.Authorize(w.withCluster(ctx), attrs)
}

func (w *workspaceRBAC) RulesFor(ctx context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	a := w.rbac.Load()
	if a == nil {
		return nil, nil, true, nil
	}
	return a.RulesFor(w.withCluster(ctx), u, namespace)
}

// binds reports whether u holds any grant in the request's workspace; false
// until the RBAC authorizer is built, so only administrators get in.
func (w *workspaceRBAC) binds(ctx context.Context, u user.Info) bool {
	a := w.rbac.Load()
	return a != nil && a.Binds(ctx, u)
}
