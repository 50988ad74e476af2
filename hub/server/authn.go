package server

import (
	"context"
	"fmt"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	tokenunion "k8s.io/apiserver/pkg/authentication/token/union"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	authzunion "k8s.io/apiserver/pkg/authorization/union"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/utils/clock"

	"github.com/wharfhub/wharf/hub/authn"
	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/login"
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

// cheapTokens are the hub's guessable credentials, each verified by a
// lookup: the static tokens and the hub-minted provider tokens.
func cheapTokens(extra *ExtraConfig) authenticator.Token {
	return tokenunion.New(extra.LoginDeps.StaticTokens, extra.Catalog.tokens)
}

// newAuthenticator authenticates requests through hub/authn's union: the
// static tokens and the hub-minted provider tokens, hub service-account
// tokens, then OIDC ID tokens if --oidc-* is set, then the browser session
// cookie (nil: none). Anonymous requests are authenticated only for the
// health endpoints, around the whole chain (authnThrottle). ctx must live
// as long as the hub: OIDC discovery and key refresh run under it.
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

// newAuthorizer builds the chain (doc.go has its threat model): what no
// workspace grant may allow (hub guards, process-wide paths) and confined identities
// (service-account tokens, impersonated identities) used outside their
// workspace are denied first; the hub's own confinement extra is allowed
// in the request's workspace; then hub administrators are allowed, then the
// scope of provider identities applies, then anonymous health probes are
// allowed (builtinpolicy.go), then everybody who may not see the
// request's workspace is denied alike whether it exists or not
// (visibility.go), then upstream's bootstrap grants to every authenticated
// caller (self reviews, discovery, public information; builtinpolicy.go),
// then the request workspace's RBAC; what none allowed is denied.
func newAuthorizer(a admins, w *workspaceRBAC, providers authorizer.Authorizer) (authorizer.Authorizer, authorizer.RuleResolver, error) {
	chain, err := authzunion.New(
		hubGuards(a, w.withCluster),
		processWideGuard(a),
		serviceAccountBinding(w),
		confinementMarker(w.withCluster),
		authzunion.NamedAuthorizer{AuthorizerName: "admins", Authorizer: authorizer.AuthorizerFunc(a.Authorize)},
		authzunion.NamedAuthorizer{AuthorizerName: "providers", Authorizer: providers},
		publicHealthStep(),
		monitoringStep(),
		visibilityStep(w.withCluster, w),
		builtinStep(),
		authzunion.NamedAuthorizer{AuthorizerName: "rbac", Authorizer: authorizer.AuthorizerFunc(w.Authorize)},
	)
	// No always-deny step closes the chain: a chain that ends in no opinion
	// is a denial, and kube-apiserver's RBAC denial carries no reason
	// (always-deny's "Everything is forbidden." would end every message
	// and kubectl auth can-i answer).
	return chain, authzunion.NewRuleResolvers(a, builtinRules{}, w), err
}

// authnThrottle wraps the hub's authenticator (loopback token included) so
// that failed authentication is charged per client address, and returns the
// throttle whose filter must run before authentication. The hub's own
// loopback token and the generated admin token (both random, so listing
// them helps no guesser) are known good from the start: an attacker
// flooding from a shared address must not lock the hub, or its
// administrator after a restart, out.
//
// Outermost of all, upstream's anonymous authenticator answers what the
// chain did not: GET and HEAD of /livez, /readyz and /healthz (and their
// clean sub-paths, which authorization then refuses) without any
// credential, addressing no workspace, are system:anonymous,
// so that kubelet and load balancer probes need no token, as
// kube-apiserver's (hub/authn WithAnonymousHealth). Outside the home
// workspace wrapper (an anonymous caller has no home) and the throttle's
// charging (no credential, nothing to charge); TokenReview uses the bare
// union and never sees it.
func (o *Options) authnThrottle(gc *genericapiserver.RecommendedConfig, adminToken string) (*authn.Throttle, error) {
	trusted, err := o.Login.TrustedProxies()
	if err != nil {
		return nil, err
	}
	t := authn.NewThrottle(o.AuthnThrottle, trusted, login.SessionCookie, clock.RealClock{})
	gc.Authentication.Authenticator = authn.WithAnonymousHealth(t.Authenticator(gc.Authentication.Authenticator),
		authn.AnonymousHealth{SessionCookie: login.SessionCookie, Explicit: explicitTarget})
	for _, tok := range []string{gc.LoopbackClientConfig.BearerToken, adminToken} {
		if tok != "" {
			t.Remember("Bearer " + tok)
		}
	}
	return t, nil
}

// explicitTarget reports whether the request named a workspace with a
// /clusters/ prefix (or its target is unknown, which must fail closed).
func explicitTarget(ctx context.Context) bool {
	t, ok := cluster.TargetFrom(ctx)
	return !ok || t.Explicit
}
