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
)

// hubGuards denies what workspace RBAC must never grant, because its
// effect reaches beyond the workspace the grant lives in. A workspace's
// admin role holds "*" on "*", as upstream's cluster-admin does, and
// upstream would let it:
//
//   - impersonate hub identities: a hub administrator, system:masters, a
//     provider (whose authorizer scope spans workspaces) or any other
//     system: user or group. Impersonating a workspace's own service
//     accounts stays allowed: such an identity is still judged by that
//     workspace's RBAC alone;
//   - write CustomResourceDefinitions, which are hub-wide objects here
//     (DESIGN.md), so a change would alter every workspace's API.
//
// Hub administrators are exempt. The guard runs before every authorizer
// that can allow, so no grant anywhere overrides it.
func hubGuards(a admins) authzunion.NamedAuthorizer {
	g := guards{admins: a}
	return authzunion.NamedAuthorizer{AuthorizerName: "hub-guards", Authorizer: authorizer.AuthorizerFunc(g.Authorize)}
}

type guards struct{ admins admins }

// impersonableSystemGroups are the system: groups an identity a workspace
// may impersonate carries anyway; none confers anything hub-wide.
var impersonableSystemGroups = sets.New(user.AllAuthenticated, serviceaccount.AllServiceAccountsGroup)

var crdWriteVerbs = sets.New("create", "update", "patch", "delete", "deletecollection")

func (g guards) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if !attrs.IsResourceRequest() || g.admins.has(attrs.GetUser()) {
		return authorizer.DecisionNoOpinion, "", nil
	}
	if attrs.GetVerb() == "impersonate" {
		if reason := g.forbiddenImpersonation(attrs); reason != "" {
			return authorizer.DecisionDeny, reason, nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	}
	if attrs.GetAPIGroup() == "apiextensions.k8s.io" && attrs.GetResource() == "customresourcedefinitions" && crdWriteVerbs.Has(attrs.GetVerb()) {
		return authorizer.DecisionDeny, "CustomResourceDefinitions are hub-wide: only hub administrators may change them", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func (g guards) forbiddenImpersonation(attrs authorizer.Attributes) string {
	name := attrs.GetName()
	switch attrs.GetResource() {
	case "users":
		if g.admins.users.Has(name) || (strings.HasPrefix(name, "system:") && !strings.HasPrefix(name, serviceaccount.ServiceAccountUsernamePrefix)) {
			return fmt.Sprintf("impersonating user %q needs a hub administrator", name)
		}
	case "groups":
		if g.admins.groups.Has(name) || (strings.HasPrefix(name, "system:") && !impersonableSystemGroups.Has(name) && !strings.HasPrefix(name, serviceaccount.ServiceAccountGroupPrefix)) {
			return fmt.Sprintf("impersonating group %q needs a hub administrator", name)
		}
	}
	return ""
}
