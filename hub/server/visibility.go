package server

import (
	"context"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	authzunion "k8s.io/apiserver/pkg/authorization/union"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/providerauth"
	"github.com/wharfhub/wharf/hub/serviceaccounts"
)

// WorkspaceDenied is the reason of every refusal caused by a workspace the
// caller may not see, whether it exists or not. It is kcp's wording, and
// it names nothing: upstream's Forbidden message around it names only what
// the caller sent (user, verb, resource or path), so an existing workspace
// and a missing one answer byte for byte the same (issue 11.9).
const WorkspaceDenied = "workspace access not permitted"

// grants says whether u holds any grant in the workspace of ctx.
type grants interface {
	binds(ctx context.Context, u user.Info) bool
}

// visibility is the authorizer step that keeps workspace existence secret
// from callers who may not see the workspace. It runs after the steps that
// allow hub administrators and scope provider identities, and before
// everything that allows a request without looking at the workspace's
// RBAC (API discovery, OpenAPI, /version, self reviews, whoami). A caller
// may see a workspace when it exists and some binding of it names the
// caller or one of the caller's groups, or it is the workspace of the
// caller's service-account token. Everybody else is denied with
// WorkspaceDenied, for every verb and path, so the answer cannot depend on
// existence: RBAC could not have allowed them anything there anyway, since
// RBAC grants come only from bindings.
//
// This is deliberately wider than kcp's "access" verb check, which would
// refuse discovery to a user bound only in one namespace: such a user
// already knows the workspace exists.
type visibility struct {
	// withCluster completes the request's workspace resolution, as for
	// every other step (workspaceRBAC.withCluster).
	withCluster func(context.Context) context.Context
	grants      grants
}

func visibilityStep(withCluster func(context.Context) context.Context, g grants) authzunion.NamedAuthorizer {
	return authzunion.NamedAuthorizer{AuthorizerName: "workspace-visibility", Authorizer: authorizer.AuthorizerFunc(visibility{withCluster: withCluster, grants: g}.Authorize)}
}

func (v visibility) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	u := attrs.GetUser()
	if u == nil {
		return authorizer.DecisionDeny, WorkspaceDenied, nil
	}
	if providerauth.IsProvider(u) {
		// Hub-minted identities, confined by the providers step before
		// this one; they are not callers who could probe.
		return authorizer.DecisionNoOpinion, "", nil
	}
	id, ok := v.cluster(ctx)
	if !ok {
		return authorizer.DecisionDeny, WorkspaceDenied, nil
	}
	if id == "" {
		// Wildcard: admitted only to privileged identities, which the
		// chain and WithClusterResolution decide.
		return authorizer.DecisionNoOpinion, "", nil
	}
	if bound, isSA := serviceaccounts.BoundCluster(u); isSA && bound == id {
		return authorizer.DecisionNoOpinion, "", nil
	}
	if v.grants.binds(cluster.WithCluster(ctx, id), u) {
		return authorizer.DecisionNoOpinion, "", nil
	}
	return authorizer.DecisionDeny, WorkspaceDenied, nil
}

// cluster returns the request's logical cluster, "" for the wildcard, or
// false when the target names no workspace (or resolution failed: that
// must look the same).
func (v visibility) cluster(ctx context.Context) (cluster.ID, bool) {
	ctx = v.withCluster(ctx)
	if id, ok := cluster.From(ctx); ok {
		return id, true
	}
	if t, ok := cluster.TargetFrom(ctx); cluster.IsWildcard(ctx) || ok && t.IsWildcard() {
		return "", true
	}
	return "", false
}
