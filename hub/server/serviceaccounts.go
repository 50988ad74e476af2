package server

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	authzunion "k8s.io/apiserver/pkg/authorization/union"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/wharfhub/wharf/hub/authn"
	"github.com/wharfhub/wharf/hub/policy"
	"github.com/wharfhub/wharf/hub/registry"
	"github.com/wharfhub/wharf/hub/serviceaccounts"
)

// serviceAccounts wires hub/serviceaccounts into the hub: the token
// authenticator exists with the authentication config, the TokenRequest
// subresource and the ServiceAccount storage only once the API is built.
type serviceAccounts struct {
	tokens        *serviceaccounts.Tokens
	authn         *serviceaccounts.Authenticator
	maxExpiration time.Duration
	// reviewAuthn is the bearer-token union TokenReview judges tokens
	// with, throttle what charges its failures; both set later in the
	// configuration.
	reviewAuthn authenticator.Request
	throttle    *authn.Throttle
}

// newServiceAccounts loads the hub-wide signing key. Tokens are issued by,
// and must be meant for, the hub's external URL.
func newServiceAccounts(ctx context.Context, o *serviceaccounts.Options, extra *ExtraConfig) (*serviceAccounts, error) {
	key, err := serviceaccounts.LoadKey(ctx, extra.EtcdClient, extra.EtcdPrefix, o.KeyFile)
	if err != nil {
		return nil, err
	}
	tokens, err := serviceaccounts.NewTokens(key, extra.ExternalURL, []string{extra.ExternalURL})
	if err != nil {
		return nil, err
	}
	return &serviceAccounts{tokens: tokens, authn: serviceaccounts.NewAuthenticator(tokens), maxExpiration: o.MaxExpiration}, nil
}

// install adds serviceaccounts/token to the core group's storage,
// tokenreviews to authentication.k8s.io's, and lets the authenticator
// read ServiceAccounts and Secrets.
func (s *serviceAccounts) install(builtin map[schema.GroupVersion]map[string]rest.Storage, authz authorizer.Authorizer) error {
	core := builtin[corev1.SchemeGroupVersion]
	store, ok := core["serviceaccounts"].(*registry.Store)
	if !ok {
		return fmt.Errorf("serviceaccounts storage is %T", core["serviceaccounts"])
	}
	secrets, ok := core["secrets"].(rest.Getter)
	if !ok {
		return fmt.Errorf("secrets storage is %T", core["secrets"])
	}
	tokenREST := serviceaccounts.NewTokenREST(store, s.tokens, s.maxExpiration).WithSecrets(secrets)
	if s.throttle != nil {
		// Minted here, so known good: a fresh token works even from an
		// address over its failure budget (hub/authn sealed.go).
		tokenREST.WithMinted(func(tok string) { s.throttle.Remember("Bearer " + tok) })
	}
	core["serviceaccounts/token"] = tokenREST
	s.authn.SetStore(store)
	s.authn.SetSecrets(secrets)
	if s.reviewAuthn == nil {
		return fmt.Errorf("token review: no authenticator")
	}
	var guard serviceaccounts.ReviewGuard
	if s.throttle != nil {
		guard = s.throttle
	}
	builtin[authenticationv1.SchemeGroupVersion]["tokenreviews"] = serviceaccounts.NewTokenReviewREST(s.reviewAuthn, s.tokens.APIAudiences(), mayUse(authz), guard)
	return nil
}

// mayUse is the workspace-access check (the "access" verb on "/", as the
// provider backends ask it) of the request's workspace.
func mayUse(authz authorizer.Authorizer) serviceaccounts.MayUse {
	return func(ctx context.Context, u user.Info) (bool, error) {
		d, _, err := authz.Authorize(ctx, authorizer.AttributesRecord{User: u, Verb: policy.AccessVerb, Path: policy.AccessPath})
		return d == authorizer.DecisionAllow, err
	}
}

// serviceAccountBinding is the deny-first authorizer step that confines a
// service-account token to its workspace, resolving the request's
// workspace as RBAC does.
func serviceAccountBinding(w *workspaceRBAC) authzunion.NamedAuthorizer {
	b := serviceaccounts.Binding{Resolve: w.withCluster}
	return authzunion.NamedAuthorizer{AuthorizerName: "serviceaccount-binding", Authorizer: authorizer.AuthorizerFunc(b.Authorize)}
}

// installDiscovery serves the service-account issuer discovery documents
// behind the API chain (authenticated and authorized like any
// non-resource path), with and without a /clusters/<workspace> prefix.
// The CLI's own discovery, /.well-known/wharf, is another path, served
// before authentication by hub/login.
func (s *serviceAccounts) installDiscovery(g *genericapiserver.GenericAPIServer, externalURL string) error {
	d, err := serviceaccounts.NewDiscovery(s.tokens, externalURL)
	if err != nil {
		return err
	}
	d.Serializer = g.Serializer
	g.Handler.NonGoRestfulMux.HandleFunc(serviceaccounts.OpenIDConfigPath, d.ServeConfig)
	g.Handler.NonGoRestfulMux.HandleFunc(serviceaccounts.JWKSPath, d.ServeJWKS)
	return nil
}
