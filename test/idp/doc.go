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
// StartWith adds clients and users for the interactive flows, all backed
// by an in-memory op.Storage: authorization code with PKCE (S256), opaque
// refresh tokens rotated on every use, and, with Options.DeviceFlow, the
// device authorization grant. The login step is a plain HTML form:
// /authorize redirects to /login?authRequestID=<id>; POSTing username,
// password and authRequestID (SubmitLogin does it) redirects to op's
// callback, which redirects to the client with code and state; a wrong
// password answers 401. Device codes are approved at /device?user_code=<c>
// with the same form, or directly with ApproveDevice.
//
//	p := idp.Start(t)
//	tok := p.Sign(t, p.Claims("wharf", nil))
//	// run the hub with --oidc-issuer-url=p.URL --oidc-ca-file=p.CAFile ...
package idp
