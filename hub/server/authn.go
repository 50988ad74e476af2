package server

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/token/tokenfile"
	tokenunion "k8s.io/apiserver/pkg/authentication/token/union"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	authzunion "k8s.io/apiserver/pkg/authorization/union"
)

// AdminUser is the identity of the generated admin token.
const AdminUser = "wharf-admin"

// newAuthenticator authenticates bearer tokens: the generated admin token,
// then the static token file. Anonymous requests are never authenticated.
func newAuthenticator(adminToken, tokenFile string) (authenticator.Request, error) {
	tokens := []authenticator.Token{tokenfile.New(map[string]*user.DefaultInfo{
		adminToken: {Name: AdminUser, UID: AdminUser, Groups: []string{user.SystemPrivilegedGroup}},
	})}
	if tokenFile != "" {
		f, err := tokenfile.NewCSV(tokenFile)
		if err != nil {
			return nil, fmt.Errorf("loading --token-auth-file: %w", err)
		}
		tokens = append(tokens, f)
	}
	// Every authenticated identity is in system:authenticated, as upstream,
	// so that bindings to that group mean what they mean elsewhere.
	return group.NewAuthenticatedGroupAdder(bearertoken.New(tokenunion.New(tokens...))), nil
}

// publicInfoPaths may be read by any authenticated user: they describe the
// API, not the data in any workspace.
var publicInfoPaths = []string{"/api", "/apis", "/openapi", "/version", "/healthz", "/livez", "/readyz"}

var selfReviews = map[schema.GroupResource]bool{
	{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}: true,
	{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"}:  true,
	{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}:      true,
}

// newAuthorizer builds the chain: hub administrators, then API discovery
// and self reviews for every authenticated user, then the request
// workspace's RBAC, then deny.
func newAuthorizer(a admins, w *workspaceRBAC) (authorizer.Authorizer, authorizer.RuleResolver, error) {
	public := authorizer.AuthorizerFunc(func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.IsResourceRequest() {
			// Asking about one's own identity and permissions reveals
			// nothing else (upstream's system:basic-user).
			if a.GetVerb() == "create" && selfReviews[schema.GroupResource{Group: a.GetAPIGroup(), Resource: a.GetResource()}] {
				return authorizer.DecisionAllow, "self review", nil
			}
			return authorizer.DecisionNoOpinion, "", nil
		}
		if a.GetVerb() != "get" {
			return authorizer.DecisionNoOpinion, "", nil
		}
		for _, p := range publicInfoPaths {
			if a.GetPath() == p || strings.HasPrefix(a.GetPath(), p+"/") {
				return authorizer.DecisionAllow, "public API information", nil
			}
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
	chain, err := authzunion.New(
		authzunion.NamedAuthorizer{AuthorizerName: "admins", Authorizer: authorizer.AuthorizerFunc(a.Authorize)},
		authzunion.NamedAuthorizer{AuthorizerName: "public-info", Authorizer: public},
		authzunion.NamedAuthorizer{AuthorizerName: "rbac", Authorizer: authorizer.AuthorizerFunc(w.Authorize)},
		authzunion.NamedAuthorizer{AuthorizerName: "deny", Authorizer: authorizerfactory.NewAlwaysDenyAuthorizer()},
	)
	return chain, authzunion.NewRuleResolvers(a, w), err
}
