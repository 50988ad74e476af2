package authn

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/plugin/pkg/authenticator/token/oidc"
)

// Authenticator is the hub's request authenticator plus the readiness of
// its OIDC part.
type Authenticator struct {
	authenticator.Request
	oidc *OIDC
}

// HealthCheck is nil once OIDC discovery succeeded (or OIDC is off). Until
// then OIDC tokens are refused and static tokens still work.
func (a *Authenticator) HealthCheck() error {
	if a.oidc == nil {
		return nil
	}
	return a.oidc.HealthCheck()
}

// OIDC returns the ID token authenticator, or nil when OIDC is off. The
// browser login maps the ID token it receives through it, so a session
// gets exactly the identity the same token would get as a bearer.
func (a *Authenticator) OIDC() authenticator.Token {
	if a.oidc == nil {
		return nil
	}
	return a.oidc
}

// OIDC verifies ID tokens with the upstream JWT authenticator (see doc.go
// for why upstream) and refuses identities in the system: namespace.
type OIDC struct {
	inner oidc.AuthenticatorTokenWithHealthCheck
}

// NewOIDC starts discovery of the issuer in the background, retried until
// ctx ends, so the hub starts even while the IdP is unreachable.
func NewOIDC(ctx context.Context, c *OIDCOptions) (*OIDC, error) {
	j, err := c.JWTAuthenticator()
	if err != nil {
		return nil, err
	}
	inner, err := oidc.New(ctx, oidc.Options{
		JWTAuthenticator: j,
		// Asymmetric algorithms only (upstream's allow-list): the key in the
		// JWKS decides, and "none" or HMAC tokens never verify.
		SupportedSigningAlgs: oidc.AllValidSigningAlgorithms(),
		CAContentProvider:    staticCA(j.Issuer.CertificateAuthority),
	})
	if err != nil {
		return nil, fmt.Errorf("oidc authenticator for %s: %w", c.IssuerURL, err)
	}
	return &OIDC{inner: inner}, nil
}

// HealthCheck is nil once the issuer's discovery document was fetched.
func (o *OIDC) HealthCheck() error { return o.inner.HealthCheck() }

var errSystemName = errors.New("oidc: identities in the system: namespace are reserved for the hub")

// AuthenticateToken verifies an ID token. A user name in system: is
// refused and groups in system: are dropped, because with prefixes
// disabled an IdP could otherwise claim system:masters or a service
// account; those identities are only ever issued by the hub itself.
func (o *OIDC) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	resp, ok, err := o.inner.AuthenticateToken(ctx, token)
	if err != nil || !ok {
		return nil, false, err
	}
	if strings.HasPrefix(resp.User.GetName(), "system:") {
		return nil, false, errSystemName
	}
	groups := make([]string, 0, len(resp.User.GetGroups()))
	for _, g := range resp.User.GetGroups() {
		if !strings.HasPrefix(g, "system:") {
			groups = append(groups, g)
		}
	}
	resp.User = &user.DefaultInfo{Name: resp.User.GetName(), UID: resp.User.GetUID(), Groups: groups, Extra: resp.User.GetExtra()}
	return resp, true, nil
}

// staticCA hands the --oidc-ca-file content to upstream; nil means the
// system roots.
func staticCA(pem string) oidc.CAContentProvider {
	if pem == "" {
		return nil
	}
	return caBytes(pem)
}

type caBytes []byte

func (c caBytes) CurrentCABundleContent() []byte { return c }
