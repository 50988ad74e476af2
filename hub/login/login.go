package login

import (
	"context"
	"golang.org/x/sync/singleflight"
	"net/http"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/utils/clock"
)

// Paths served by the login handler, ahead of the API.
const (
	LoginPath      = "/auth/login"
	CallbackPath   = "/auth/callback"
	LogoutPath     = "/auth/logout"
	SessionPath    = "/auth/session"
	TokenLoginPath = "/auth/token-login"
	WellKnownPath  = "/.well-known/wharf"
)

// OIDC names the IdP and the client browser login uses: hub/authn's
// --oidc-* flags.
type OIDC struct {
	IssuerURL string
	ClientID  string
	// CLIClientID is advertised to the CLI (/.well-known/wharf).
	CLIClientID string
	// CAData is the PEM bundle to trust for the IdP; nil: system roots.
	CAData []byte
}

// Config is everything the login handler needs from the hub.
type Config struct {
	Options     *Options
	ExternalURL string
	// OIDC is nil when no issuer is configured: no browser login.
	OIDC *OIDC
	// Etcd and EtcdPrefix hold used states and session records.
	Etcd       *clientv3.Client
	EtcdPrefix string
	// StateKey and SessionKey are hub-wide secrets
	// (bootstrap.SharedSecret "login-state-key" and "session-key").
	StateKey, SessionKey []byte
	// CAData is the hub's CA, written into token-login kubeconfigs.
	CAData []byte
	Clock  clock.Clock
}

// Deps are the parts of the hub's authenticator the handler uses, known
// only after the union (which contains the session authenticator) exists.
type Deps struct {
	// IDTokens maps a verified ID token to the hub identity: the same
	// authenticator that accepts it as a bearer (nil: OIDC off).
	IDTokens authenticator.Token
	// StaticTokens are the tokens /auth/token-login exchanges.
	StaticTokens authenticator.Token
	// Home names the workspace a token-login kubeconfig points at; nil
	// means root.
	Home func(ctx context.Context, u user.Info) (string, error)
}

// Login is the hub's browser login, session cookie and CLI bootstrap.
type Login struct {
	cfg      Config
	states   *states
	sessions *sessions
	store    *store
	auth     *SessionAuthenticator
	limiter  *RateLimiter
	idp      *provider // nil without OIDC
	// refreshes lets concurrent requests of one session on this replica
	// share one refresh: a rotated refresh token may be spent only once,
	// and IdPs that detect reuse revoke the whole token family.
	refreshes singleflight.Group
}

// New builds the login machinery; Handler mounts it.
func New(cfg Config) (*Login, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	st, err := newStates(cfg.StateKey)
	if err != nil {
		return nil, err
	}
	se, err := newSessions(cfg.SessionKey)
	if err != nil {
		return nil, err
	}
	db, err := newStore(cfg.Etcd, cfg.EtcdPrefix, cfg.SessionKey)
	if err != nil {
		return nil, err
	}
	trusted, err := cfg.Options.trustedProxies()
	if err != nil {
		return nil, err
	}
	l := &Login{
		cfg: cfg, states: st, sessions: se, store: db,
		auth:    &SessionAuthenticator{sessions: se, store: db, clock: cfg.Clock},
		limiter: NewRateLimiter(cfg.Options.RateLimit, cfg.Options.RateBurst, 10000, trusted, cfg.Clock),
	}
	if cfg.OIDC != nil {
		secret, err := cfg.Options.clientSecret()
		if err != nil {
			return nil, err
		}
		l.idp = newProvider(cfg.OIDC, secret, cfg.Options.Scopes, strings.TrimSuffix(cfg.ExternalURL, "/")+CallbackPath)
	}
	return l, nil
}

// Sessions is the session cookie authenticator for the hub's union.
func (l *Login) Sessions() *SessionAuthenticator { return l.auth }

// Handler serves the login endpoints in front of delegate (the API and
// provider proxies) and guards delegate with session refresh and CSRF.
// The login endpoints need no authentication; those that start or finish
// a login are rate-limited per client address.
func (l *Login) Handler(delegate http.Handler, d Deps) http.Handler {
	mux := http.NewServeMux()
	limited := l.limiter.WithRateLimit
	mux.Handle(LoginPath, limited(http.HandlerFunc(l.login)))
	mux.Handle(CallbackPath, limited(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { l.callback(w, r, d) })))
	mux.Handle(TokenLoginPath, limited(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { l.tokenLogin(w, r, d) })))
	mux.Handle(TokenSessionPath, limited(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { l.tokenSession(w, r, d) })))
	mux.Handle(LogoutPath, WithCSRF(http.HandlerFunc(l.logout), l.auth, l.cfg.ExternalURL))
	mux.Handle(SessionPath, l.withRefresh(http.HandlerFunc(l.session), d))
	mux.HandleFunc(WellKnownPath, l.wellKnown)
	guarded := l.withRefresh(WithCSRF(delegate, l.auth, l.cfg.ExternalURL), d)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case LoginPath, CallbackPath, TokenLoginPath, TokenSessionPath, LogoutPath, SessionPath, WellKnownPath:
			mux.ServeHTTP(w, r)
		default:
			guarded.ServeHTTP(w, r)
		}
	})
}
