package server

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	authzunion "k8s.io/apiserver/pkg/authorization/union"

	"github.com/wharfhub/wharf/hub/cluster"
)

// hubGuards denies what workspace RBAC must never grant, because its
// effect reaches beyond the workspace the grant lives in. A workspace's
// admin role holds "*" on "*", as upstream's cluster-admin does, and
// upstream would let it:
//
//   - impersonate hub identities, with any impersonation verb
//     (isImpersonateVerb): system:masters, a provider (whose authorizer
//     scope spans workspaces), a node or any other system: user or group,
//     every user or group at once, or a hub-owned extra (wharf.dev/*,
//     above all the confinement extra with another workspace).
//     Impersonating a workspace's own service accounts stays allowed: the
//     identity is confined to that workspace and judged by its RBAC alone.
//     The names and groups of --admin-user and --admin-group are not
//     refused here: a confined identity is never a hub administrator
//     (admins.has), so impersonating them gives what any other name gets,
//     and a refusal for them alone would tell who the administrators are
//     (review 5, #7);
//   - write CustomResourceDefinitions, which are hub-wide objects here
//     (DESIGN.md), so a change would alter every workspace's API.
//
// Hub administrators are exempt. The guard runs before every authorizer
// that can allow, so no grant anywhere overrides it. resolve completes the
// request's workspace resolution (workspaceRBAC.withCluster).
func hubGuards(a admins, resolve func(context.Context) context.Context) authzunion.NamedAuthorizer {
	g := guards{admins: a, resolve: resolve}
	return authzunion.NamedAuthorizer{AuthorizerName: "hub-guards", Authorizer: authorizer.AuthorizerFunc(g.Authorize)}
}

type guards struct {
	admins  admins
	resolve func(context.Context) context.Context
}

// impersonableSystemGroups are the system: groups an identity a workspace
// may impersonate carries anyway; none confers anything hub-wide.
var impersonableSystemGroups = sets.New(user.AllAuthenticated, serviceaccount.AllServiceAccountsGroup)

// hubExtraPrefix marks the extra keys the hub asserts itself.
const hubExtraPrefix = "wharf.dev/"

var crdWriteVerbs = sets.New("create", "update", "patch", "delete", "deletecollection")

func (g guards) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if !attrs.IsResourceRequest() || g.admins.has(attrs.GetUser()) {
		return authorizer.DecisionNoOpinion, "", nil
	}
	if isImpersonateVerb(attrs.GetVerb()) {
		if reason := g.forbiddenImpersonation(ctx, attrs); reason != "" {
			return authorizer.DecisionDeny, reason, nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	}
	if attrs.GetAPIGroup() == "apiextensions.k8s.io" && attrs.GetResource() == "customresourcedefinitions" && crdWriteVerbs.Has(attrs.GetVerb()) {
		return authorizer.DecisionDeny, "CustomResourceDefinitions are hub-wide: only hub administrators may change them", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// forbiddenImpersonation checks what upstream's impersonation filter asks
// about (k8s.io/apiserver/pkg/endpoints/filters/impersonation): users,
// groups, uids and userextras by name, serviceaccounts by namespace and
// name, nodes (constrained modes) by node name. Upstream first tries "*"
// for many groups or extras at once and checks each one when that is
// denied; denying "*" keeps every name in view here.
func (g guards) forbiddenImpersonation(ctx context.Context, attrs authorizer.Attributes) string {
	name := attrs.GetName()
	switch attrs.GetResource() {
	case "users":
		if name == "*" || (strings.HasPrefix(name, "system:") && !strings.HasPrefix(name, serviceaccount.ServiceAccountUsernamePrefix)) {
			return fmt.Sprintf("impersonating user %q needs a hub administrator", name)
		}
	case "groups":
		if name == "*" || (strings.HasPrefix(name, "system:") && !impersonableSystemGroups.Has(name) && !strings.HasPrefix(name, serviceaccount.ServiceAccountGroupPrefix)) {
			return fmt.Sprintf("impersonating group %q needs a hub administrator", name)
		}
	case "nodes":
		// The hub has no nodes; system:node:<name> is a system: user.
		return fmt.Sprintf("impersonating node %q needs a hub administrator", name)
	case "userextras":
		return g.forbiddenExtra(ctx, strings.ToLower(attrs.GetSubresource()), name)
	}
	return ""
}

// forbiddenExtra refuses hub-owned extra keys. The confinement extra is
// allowed with the request's own workspace only: that is the value the
// hub itself asks for (withImpersonationConfinement).
func (g guards) forbiddenExtra(ctx context.Context, key, value string) string {
	if key == "*" {
		return "impersonating every extra at once needs a hub administrator"
	}
	if !strings.HasPrefix(key, hubExtraPrefix) {
		return ""
	}
	if key == cluster.ConfinedExtra {
		if id, ok := cluster.From(g.resolve(ctx)); ok && string(id) == value {
			return ""
		}
		return "an impersonated identity is confined to the workspace of the request"
	}
	return fmt.Sprintf("the extra %q is asserted by the hub only", key)
}
