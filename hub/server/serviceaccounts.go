package server

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	authzunion "k8s.io/apiserver/pkg/authorization/union"
	"k8s.io/apiserver/pkg/registry/rest"

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

// install adds serviceaccounts/token to the core group's storage and lets
// the authenticator read ServiceAccounts.
func (s *serviceAccounts) install(builtin map[schema.GroupVersion]map[string]rest.Storage) error {
	core := builtin[corev1.SchemeGroupVersion]
	store, ok := core["serviceaccounts"].(*registry.Store)
	if !ok {
		return fmt.Errorf("serviceaccounts storage is %T", core["serviceaccounts"])
	}
	core["serviceaccounts/token"] = serviceaccounts.NewTokenREST(store, s.tokens, s.maxExpiration)
	s.authn.SetStore(store)
	return nil
}

// serviceAccountBinding is the deny-first authorizer step that confines a
// service-account token to its workspace, resolving the request's
// workspace as RBAC does.
func serviceAccountBinding(w *workspaceRBAC) authzunion.NamedAuthorizer {
	b := serviceaccounts.Binding{Resolve: w.withCluster}
	return authzunion.NamedAuthorizer{AuthorizerName: "serviceaccount-binding", Authorizer: authorizer.AuthorizerFunc(b.Authorize)}
}
