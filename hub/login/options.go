package login

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Options are the browser-login, token-login and rate-limit flags. The
// issuer and client id are hub/authn's --oidc-* flags: browser login uses
// the same client whose ID tokens the hub accepts.
type Options struct {
	ClientSecret     string
	ClientSecretFile string
	Scopes           []string
	SessionMaxAge    time.Duration
	// TokenLogin enables /auth/token-login; nil means the default: on
	// exactly when no OIDC issuer is configured (a dev setup).
	TokenLogin        *bool
	TrustedProxyCIDRs []string
	RateLimit         float64
	RateBurst         int
}

// defaultScopes are requested from the IdP and advertised to the CLI.
// offline_access asks for a refresh token; groups is ignored by IdPs that
// put groups into the ID token by other means.
var defaultScopes = []string{"openid", "email", "profile", "groups", "offline_access"}

// NewOptions returns the defaults documented in the flags.
func NewOptions() *Options {
	return &Options{Scopes: append([]string(nil), defaultScopes...), SessionMaxAge: 12 * time.Hour, RateLimit: 1, RateBurst: 20}
}

// AddFlags registers the flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ClientSecret, "oidc-client-secret", o.ClientSecret, "Client secret of --oidc-client-id for browser login, if the IdP registered it as a confidential client. Prefer --oidc-client-secret-file: flags are visible in the process list.")
	fs.StringVar(&o.ClientSecretFile, "oidc-client-secret-file", o.ClientSecretFile, "File holding the client secret of --oidc-client-id.")
	fs.StringSliceVar(&o.Scopes, "oidc-scopes", o.Scopes, "Scopes requested at browser login and advertised to the CLI in /.well-known/wharf.")
	fs.DurationVar(&o.SessionMaxAge, "session-max-age", o.SessionMaxAge, "Longest a browser session lasts, however often it is refreshed.")
	fs.Var(&optionalBool{p: &o.TokenLogin}, "enable-token-login", "Serve /auth/token-login (static token → kubeconfig, for development). Default: on only when --oidc-issuer-url is not set.")
	fs.Lookup("enable-token-login").NoOptDefVal = "true"
	fs.StringSliceVar(&o.TrustedProxyCIDRs, "trusted-proxy-cidrs", o.TrustedProxyCIDRs, "Reverse proxies whose X-Forwarded-For is believed when rate-limiting login endpoints and failed authentication per client address.")
	fs.Float64Var(&o.RateLimit, "login-rate-limit", o.RateLimit, "Requests per second per client address to /auth/login, /auth/callback and /auth/token-login.")
	fs.IntVar(&o.RateBurst, "login-rate-burst", o.RateBurst, "Burst of requests per client address to the login endpoints.")
}

// Validate checks the options; oidc says whether an issuer is configured.
func (o *Options) Validate(oidc bool) []error {
	var errs []error
	if o.ClientSecret != "" && o.ClientSecretFile != "" {
		errs = append(errs, errors.New("--oidc-client-secret and --oidc-client-secret-file are exclusive"))
	}
	if (o.ClientSecret != "" || o.ClientSecretFile != "") && !oidc {
		errs = append(errs, errors.New("--oidc-client-secret needs --oidc-issuer-url"))
	}
	if o.ClientSecretFile != "" {
		if _, err := os.Stat(o.ClientSecretFile); err != nil {
			errs = append(errs, fmt.Errorf("--oidc-client-secret-file: %w", err))
		}
	}
	if o.SessionMaxAge < time.Minute {
		errs = append(errs, errors.New("--session-max-age must be at least a minute"))
	}
	if o.RateLimit <= 0 || o.RateBurst < 1 {
		errs = append(errs, errors.New("--login-rate-limit and --login-rate-burst must be positive"))
	}
	if _, err := o.trustedProxies(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// TokenLoginEnabled resolves the --enable-token-login default.
func (o *Options) TokenLoginEnabled(oidc bool) bool {
	if o.TokenLogin != nil {
		return *o.TokenLogin
	}
	return !oidc
}

// clientSecret reads the secret from the flag or its file.
func (o *Options) clientSecret() (string, error) {
	if o.ClientSecretFile == "" {
		return o.ClientSecret, nil
	}
	b, err := os.ReadFile(o.ClientSecretFile)
	if err != nil {
		return "", fmt.Errorf("reading --oidc-client-secret-file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// TrustedProxies parses --trusted-proxy-cidrs: the peers whose
// X-Forwarded-For is believed by every per-address limit of the hub.
func (o *Options) TrustedProxies() ([]*net.IPNet, error) { return o.trustedProxies() }

func (o *Options) trustedProxies() ([]*net.IPNet, error) {
	var nets []*net.IPNet
	for _, c := range o.TrustedProxyCIDRs {
		_, n, err := net.ParseCIDR(strings.TrimSpace(c))
		if err != nil {
			return nil, fmt.Errorf("--trusted-proxy-cidrs %q: %w", c, err)
		}
		nets = append(nets, n)
	}
	return nets, nil
}

// optionalBool is a bool flag that remembers whether it was set.
type optionalBool struct{ p **bool }

func (b *optionalBool) String() string {
	if b.p == nil || *b.p == nil {
		return ""
	}
	return strconv.FormatBool(**b.p)
}

func (b *optionalBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*b.p = &v
	return nil
}

func (b *optionalBool) Type() string { return "bool" }
