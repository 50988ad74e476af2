package authn

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/utils/ptr"
)

// Options are the authentication flags the hub adds to its own. Today they
// configure OIDC; static tokens keep their existing flags in hub/server.
type Options struct {
	OIDC OIDCOptions
	// ServiceAccounts, if set, verifies hub service-account tokens. It is
	// not a flag: the hub sets it before calling Authenticator.
	ServiceAccounts authenticator.Token
	// APIAudiences are the hub's own audiences (see Sources.APIAudiences).
	APIAudiences []string
}

// OIDCOptions mirror kube-apiserver's --oidc-* flags, with the same
// meaning, so that existing IdP setups carry over unchanged.
type OIDCOptions struct {
	IssuerURL string
	ClientID  string
	// CLIClientID is a second accepted audience: the public client the
	// wharf CLI logs in with, when it is not ClientID.
	CLIClientID    string
	CAFile         string
	UsernameClaim  string
	UsernamePrefix string
	GroupsClaim    string
	GroupsPrefix   string
	RequiredClaims map[string]string
}

// NewOptions returns options with upstream's defaults.
func NewOptions() *Options {
	return &Options{OIDC: OIDCOptions{UsernameClaim: "email", RequiredClaims: map[string]string{}}}
}

// AddFlags registers the --oidc-* flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	c := &o.OIDC
	if c.RequiredClaims == nil {
		c.RequiredClaims = map[string]string{}
	}
	fs.StringVar(&c.IssuerURL, "oidc-issuer-url", c.IssuerURL, "https URL of the OpenID issuer. If set, ID tokens from it are accepted as bearer tokens. Its discovery document and keys are fetched from there.")
	fs.StringVar(&c.ClientID, "oidc-client-id", c.ClientID, "Client ID the ID tokens must be issued for (their audience). Required with --oidc-issuer-url.")
	fs.StringVar(&c.CLIClientID, "oidc-cli-client-id", c.CLIClientID, "Client ID the wharf CLI logs in with. ID tokens issued for it are accepted too. Default: --oidc-client-id.")
	fs.StringVar(&c.CAFile, "oidc-ca-file", c.CAFile, "PEM CA bundle to verify the issuer's TLS certificate with, instead of the system roots.")
	fs.StringVar(&c.UsernameClaim, "oidc-username-claim", c.UsernameClaim, "ID token claim used as the user name. If it is email, email_verified must not be false.")
	fs.StringVar(&c.UsernamePrefix, "oidc-username-prefix", c.UsernamePrefix, "Prefix for user names. Unset: none for the email claim, otherwise the issuer URL followed by #. \"-\" disables prefixing.")
	fs.StringVar(&c.GroupsClaim, "oidc-groups-claim", c.GroupsClaim, "ID token claim holding the user's groups (a string or a list of strings).")
	fs.StringVar(&c.GroupsPrefix, "oidc-groups-prefix", c.GroupsPrefix, "Prefix for group names, to keep them apart from the hub's own groups.")
	fs.Var(cliflag.NewMapStringStringNoSplit(&c.RequiredClaims), "oidc-required-claim", "key=value claim that must be in the ID token with exactly that value. Repeat for several.")
}

// Audiences are the client IDs whose ID tokens are accepted: the hub's
// (browser login) and, if different, the CLI's.
func (c *OIDCOptions) Audiences() []string {
	if c.CLIClientID == "" || c.CLIClientID == c.ClientID {
		return []string{c.ClientID}
	}
	return []string{c.ClientID, c.CLIClientID}
}

// CLIClient is the client ID the CLI should use (/.well-known/wharf).
func (c *OIDCOptions) CLIClient() string {
	if c.CLIClientID != "" {
		return c.CLIClientID
	}
	return c.ClientID
}

// Enabled reports whether OIDC tokens are accepted.
func (c *OIDCOptions) Enabled() bool { return c.IssuerURL != "" || c.ClientID != "" }

// Validate checks the options without contacting the issuer: the hub must
// start even when the IdP is down, and discovery is retried in background.
func (o *Options) Validate() []error {
	c := &o.OIDC
	var errs []error
	if !c.Enabled() {
		if c.CAFile != "" || c.CLIClientID != "" || c.GroupsClaim != "" || c.UsernamePrefix != "" || c.GroupsPrefix != "" || len(c.RequiredClaims) > 0 {
			errs = append(errs, errors.New("--oidc-* flags need --oidc-issuer-url and --oidc-client-id"))
		}
		return errs
	}
	if c.IssuerURL == "" || c.ClientID == "" {
		errs = append(errs, errors.New("--oidc-issuer-url and --oidc-client-id must be set together"))
	}
	if c.IssuerURL != "" {
		if u, err := url.Parse(c.IssuerURL); err != nil || u.Scheme != "https" || u.Host == "" {
			errs = append(errs, fmt.Errorf("--oidc-issuer-url %q: must be an https URL", c.IssuerURL))
		}
	}
	if c.UsernameClaim == "" {
		errs = append(errs, errors.New("--oidc-username-claim must not be empty"))
	}
	if c.CAFile != "" {
		if _, err := os.Stat(c.CAFile); err != nil {
			errs = append(errs, fmt.Errorf("--oidc-ca-file: %w", err))
		}
	}
	for k := range c.RequiredClaims {
		if strings.TrimSpace(k) == "" {
			errs = append(errs, errors.New("--oidc-required-claim: empty claim name"))
		}
	}
	return errs
}

// JWTAuthenticator translates the flags into upstream's structured
// configuration exactly as kube-apiserver does for its legacy flags.
func (c *OIDCOptions) JWTAuthenticator() (apiserver.JWTAuthenticator, error) {
	prefix := c.UsernamePrefix
	switch {
	case prefix == "-":
		prefix = ""
	case prefix == "" && c.UsernameClaim != "email":
		// Upstream's legacy default (kubernetes#31380): a non-email claim
		// such as sub is only unique per issuer, so qualify it.
		prefix = c.IssuerURL + "#"
	}
	j := apiserver.JWTAuthenticator{
		Issuer: apiserver.Issuer{URL: c.IssuerURL, Audiences: c.Audiences()},
		ClaimMappings: apiserver.ClaimMappings{
			Username: apiserver.PrefixedClaimOrExpression{Claim: c.UsernameClaim, Prefix: ptr.To(prefix)},
		},
	}
	if len(j.Issuer.Audiences) > 1 {
		// Upstream requires an explicit policy for several audiences: a
		// token is accepted when any of its audiences is one of ours.
		j.Issuer.AudienceMatchPolicy = apiserver.AudienceMatchPolicyMatchAny
	}
	if c.GroupsClaim != "" {
		j.ClaimMappings.Groups = apiserver.PrefixedClaimOrExpression{Claim: c.GroupsClaim, Prefix: ptr.To(c.GroupsPrefix)}
	}
	if c.CAFile != "" {
		ca, err := os.ReadFile(c.CAFile)
		if err != nil {
			return j, fmt.Errorf("reading --oidc-ca-file: %w", err)
		}
		j.Issuer.CertificateAuthority = string(ca)
	}
	// Sorted so the configuration, and its validation errors, are stable.
	keys := make([]string, 0, len(c.RequiredClaims))
	for k := range c.RequiredClaims {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		j.ClaimValidationRules = append(j.ClaimValidationRules, apiserver.ClaimValidationRule{Claim: k, RequiredValue: c.RequiredClaims[k]})
	}
	return j, nil
}

// Authenticator builds the hub's union (see New) from the static token
// authenticator, OIDC if configured, and the browser session (nil: none).
// ctx bounds the OIDC
// authenticator's background discovery and key fetching: cancel it only
// when the hub stops.
func (o *Options) Authenticator(ctx context.Context, static authenticator.Token, session authenticator.Request) (*Authenticator, error) {
	a := &Authenticator{}
	var oidcToken authenticator.Token
	if o.OIDC.Enabled() {
		v, err := NewOIDC(ctx, &o.OIDC)
		if err != nil {
			return nil, err
		}
		a.oidc, oidcToken = v, v
	}
	a.Request = New(Sources{Static: static, ServiceAccounts: o.ServiceAccounts, OIDC: oidcToken, Session: session, APIAudiences: o.APIAudiences})
	return a, nil
}
