package server

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	tokenunion "k8s.io/apiserver/pkg/authentication/token/union"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	authzunion "k8s.io/apiserver/pkg/authorization/union"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/utils/clock"

	"github.com/wharfhub/wharf/hub/authn"
	"github.com/wharfhub/wharf/hub/authz/rbac"
	"github.com/wharfhub/wharf/hub/login"
	"github.com/wharfhub/wharf/hub/policy"
)

// AdminUser is the identity of the generated admin token.
const AdminUser = "wharf-admin"

// staticTokens are the generated admin token and the static token file.
func staticTokens(adminToken, tokenFile string) (authenticator.Token, error) {
	admin := &user.DefaultInfo{Name: AdminUser, UID: AdminUser, Groups: []string{user.SystemPrivilegedGroup}}
	static, err := authn.StaticTokens(adminToken, admin, tokenFile)
	if err != nil {
		return nil, fmt.Errorf("loading --token-auth-file: %w", err)
	}
	return static, nil
}

// newAuthenticator authenticates requests through hub/authn's union: the
// static tokens and the hub-minted provider tokens, hub service-account
// tokens, then OIDC ID tokens if --oidc-* is set, then the browser session
// cookie (nil: none). Anonymous requests are never authenticated. ctx must
// live as long as the hub: OIDC discovery and key refresh run under it.
func newAuthenticator(ctx context.Context, static, providers, sa authenticator.Token, o *authn.Options, session authenticator.Request) (*authn.Authenticator, error) {
	// Provider tokens are minted by the hub itself (hub/providerauth), so
	// they sit in the static slot, after the admin token and the file.
	o.ServiceAccounts = sa
	a, err := o.Authenticator(ctx, tokenunion.New(static, providers), session)
	if err != nil {
		return nil, fmt.Errorf("building authenticator: %w", err)
	}
	return a, nil
}

// publicInfoPaths may be read by any authenticated user who may see the
// workspace: they describe its API (its discovery differs by the providers
// it enabled), not its data. They are exactly the paths the process-wide
// guard lets through (one list, so the two cannot drift apart).
var publicInfoPaths = policy.WorkspaceURLs()

var issuerDiscoveryPaths = policy.IssuerDiscoveryURLs()

var selfReviews = map[schema.GroupResource]bool{
	{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}: true,
	{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"}:  true,
	{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}:      true,
}

// newAuthorizer builds the chain (doc.go has its threat model): what no
// workspace grant may allow (hub guards, process-wide paths) and confined identities
// (service-account tokens, impersonated identities) used outside their
// workspace are denied first; the hub's own confinement extra is allowed
// in the request's workspace; then hub administrators are allowed, then the
// scope of provider identities applies, then everybody who may not see the
// request's workspace is denied alike whether it exists or not
// (visibility.go), then API discovery and self reviews are allowed to the
// rest, then the request workspace's RBAC, then deny.
func newAuthorizer(a admins, w *workspaceRBAC, providers authorizer.Authorizer) (authorizer.Authorizer, authorizer.RuleResolver, error) {
	public := authorizer.AuthorizerFunc(func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.IsResourceRequest() {
			// Asking about one's own identity and permissions reveals
			// nothing else (upstream's system:basic-user), once the
			// visibility step let the caller see the workspace.
			if a.GetVerb() == "create" && selfReviews[schema.GroupResource{Group: a.GetAPIGroup(), Resource: a.GetResource()}] {
				return authorizer.DecisionAllow, "self review", nil
			}
			return authorizer.DecisionNoOpinion, "", nil
		}
		if a.GetVerb() != "get" {
			return authorizer.DecisionNoOpinion, "", nil
		}
		if rbac.NonResourceURLMatches(publicInfoPaths, a.GetPath()) {
			return authorizer.DecisionAllow, "public API information", nil
		}
		// Upstream binds system:service-account-issuer-discovery to every
		// service account; the hub holds that binding for every workspace
		// (a service account here is one of this workspace: the binding
		// step denied any other). Everyone else needs an RBAC grant.
		if slices.Contains(a.GetUser().GetGroups(), serviceaccount.AllServiceAccountsGroup) &&
			rbac.NonResourceURLMatches(issuerDiscoveryPaths, a.GetPath()) {
			return authorizer.DecisionAllow, "service-account issuer discovery", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
	chain, err := authzunion.New(
		hubGuards(a, w.withCluster),
		processWideGuard(a),
		serviceAccountBinding(w),
		confinementMarker(w.withCluster),
		authzunion.NamedAuthorizer{AuthorizerName: "admins", Authorizer: authorizer.AuthorizerFunc(a.Authorize)},
		authzunion.NamedAuthorizer{AuthorizerName: "providers", Authorizer: providers},
		visibilityStep(w.withCluster, w),
		authzunion.NamedAuthorizer{AuthorizerName: "public-info", Authorizer: public},
		authzunion.NamedAuthorizer{AuthorizerName: "rbac", Authorizer: authorizer.AuthorizerFunc(w.Authorize)},
		authzunion.NamedAuthorizer{AuthorizerName: "deny", Authorizer: authorizerfactory.NewAlwaysDenyAuthorizer()},
	)
	return chain, authzunion.NewRuleResolvers(a, w), err
}

// authnThrottle wraps the hub's authenticator (loopback token included) so
// that failed authentication is charged per client address, and returns the
// throttle whose filter must run before authentication. The hub's own
// loopback token and the generated admin token (both random, so listing
// them helps no guesser) are known good from the start: an attacker
// flooding from a shared address must not lock the hub, or its
// administrator after a restart, out.
func (o *Options) authnThrottle(gc *genericapiserver.RecommendedConfig, adminToken string) (*authn.Throttle, error) {
	trusted, err := o.Login.TrustedProxies()
	if err != nil {
		return nil, err
	}
	t := authn.NewThrottle(o.AuthnThrottle, trusted, login.SessionCookie, clock.RealClock{})
	gc.Authentication.Authenticator = t.Authenticator(gc.Authentication.Authenticator)
	for _, tok := range []string{gc.LoopbackClientConfig.BearerToken, adminToken} {
		if tok != "" {
			t.Remember("Bearer " + tok)
		}
	}
	return t, nil
}
