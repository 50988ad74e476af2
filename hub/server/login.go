package server

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"k8s.io/apiserver/pkg/authentication/authenticator"

	"github.com/wharfhub/wharf/hub/bootstrap"
	"github.com/wharfhub/wharf/hub/login"
)

// newLoginAuthenticator builds the browser login (hub/login) and the
// hub's authenticator union with the session cookie as its last member.
// The login keys are hub-wide shared secrets in etcd, so a cookie sealed
// or a state signed by one replica is accepted by every other.
func (o *Options) newLoginAuthenticator(ctx context.Context, extra *ExtraConfig) (authenticator.Request, error) {
	stateKey, err := bootstrap.SharedSecret(ctx, extra.EtcdClient, extra.EtcdPrefix, "login-state-key", login.GenerateKey)
	if err != nil {
		return nil, err
	}
	sessionKey, err := bootstrap.SharedSecret(ctx, extra.EtcdClient, extra.EtcdPrefix, "session-key", login.GenerateKey)
	if err != nil {
		return nil, err
	}
	ca := extra.CAData
	cfg := login.Config{
		Options: o.Login, ExternalURL: o.ExternalURL, Etcd: extra.EtcdClient, EtcdPrefix: extra.EtcdPrefix,
		StateKey: stateKey, SessionKey: sessionKey, CAData: ca,
	}
	if c := &o.Authn.OIDC; c.Enabled() {
		cfg.OIDC = &login.OIDC{IssuerURL: c.IssuerURL, ClientID: c.ClientID, CLIClientID: c.CLIClient()}
		if c.CAFile != "" {
			if cfg.OIDC.CAData, err = os.ReadFile(c.CAFile); err != nil {
				return nil, fmt.Errorf("reading --oidc-ca-file: %w", err)
			}
		}
	}
	if extra.Login, err = login.New(cfg); err != nil {
		return nil, fmt.Errorf("browser login: %w", err)
	}
	static, err := staticTokens(extra.AdminToken, o.TokenAuthFile)
	if err != nil {
		return nil, err
	}
	o.Authn.APIAudiences = extra.ServiceAccounts.tokens.APIAudiences()
	a, err := newAuthenticator(ctx, static, extra.Catalog.tokens, extra.ServiceAccounts.authn, o.Authn, extra.Login.Sessions())
	if err != nil {
		return nil, err
	}
	// TokenReview judges bare bearer tokens with the union alone: not the
	// home-workspace wrapper (a review must not create anybody's home).
	extra.ServiceAccounts.reviewAuthn = a.Request
	extra.LoginDeps = login.Deps{IDTokens: a.OIDC(), StaticTokens: static}
	return a, nil
}

// withLogin serves the login endpoints ahead of h and guards h with
// session refresh and the CSRF check for cookie-authenticated requests
// (API and provider proxies alike).
func withLogin(h http.Handler, extra *ExtraConfig) http.Handler {
	return extra.Login.Handler(h, extra.LoginDeps)
}
