package idp

import (
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Client is an OAuth client registered at the IdP.
type Client struct {
	ID string
	// Secret authenticates a confidential client at the token endpoint
	// (HTTP Basic, client_secret_basic).
	// Empty means a public (native) client, which must use PKCE; its
	// loopback redirect URIs match any port (RFC 8252, section 7.3).
	Secret       string
	RedirectURIs []string
	// DevMode lets the client use plain-http, non-loopback redirect URIs.
	DevMode bool
}

// opClient is how a Client appears to op.
type opClient struct {
	c           Client
	loginURL    func(authRequestID string) string
	idTokenLife time.Duration
	deviceFlow  bool
}

var _ op.Client = (*opClient)(nil)

func (c *opClient) GetID() string                    { return c.c.ID }
func (c *opClient) RedirectURIs() []string           { return c.c.RedirectURIs }
func (c *opClient) PostLogoutRedirectURIs() []string { return nil }
func (c *opClient) LoginURL(id string) string        { return c.loginURL(id) }
func (c *opClient) AccessTokenType() op.AccessTokenType {
	return op.AccessTokenTypeBearer // opaque
}
func (c *opClient) IDTokenLifetime() time.Duration { return c.idTokenLife }
func (c *opClient) DevMode() bool                  { return c.c.DevMode }
func (c *opClient) ClockSkew() time.Duration       { return 0 }

func (c *opClient) ApplicationType() op.ApplicationType {
	if c.c.Secret == "" {
		return op.ApplicationTypeNative
	}
	return op.ApplicationTypeWeb
}

func (c *opClient) AuthMethod() oidc.AuthMethod {
	if c.c.Secret == "" {
		return oidc.AuthMethodNone
	}
	return oidc.AuthMethodBasic
}

func (c *opClient) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}

func (c *opClient) GrantTypes() []oidc.GrantType {
	g := []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeRefreshToken}
	if c.deviceFlow {
		g = append(g, oidc.GrantTypeDeviceCode)
	}
	return g
}

func (c *opClient) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

func (c *opClient) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

// IsScopeAllowed admits the custom "groups" scope besides the standard ones.
func (c *opClient) IsScopeAllowed(scope string) bool { return scope == "groups" }

// IDTokenUserinfoClaimsAssertion puts email, name and groups into the ID
// token even when an access token is issued: the hub authenticates ID
// tokens and never calls the userinfo endpoint.
func (c *opClient) IDTokenUserinfoClaimsAssertion() bool { return true }
