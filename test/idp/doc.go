// Package idp is the end-to-end test fixture for a real OpenID Provider:
// zitadel's github.com/zitadel/oidc/v3 op package, served over TLS on
// loopback from a minimal in-memory storage (signing keys and user info).
//
// It publishes discovery and a JWKS exactly as a production IdP does, so
// the hub's OIDC authenticator is exercised end to end: discovery, key
// fetch and refetch after Rotate. ID tokens are minted either by op's own
// ID token code (Mint) or, when a test needs a deliberately wrong claim,
// signed directly with the IdP's current key (Sign) or any other (SignWith).
//
// The interactive login and code exchange endpoints are not backed yet:
// the storage embeds a nil op.Storage, so they panic if a test drives them.
//
//	p := idp.Start(t)
//	tok := p.Sign(t, p.Claims("wharf", nil))
//	// run the hub with --oidc-issuer-url=p.URL --oidc-ca-file=p.CAFile ...
package idp
