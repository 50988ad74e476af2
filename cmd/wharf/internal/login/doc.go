// Package login implements the CLI side of logging in to a Wharf hub:
// the hub's /.well-known/wharf discovery, the OIDC authorization code flow
// with PKCE over a loopback redirect (RFC 8252), the device authorization
// grant (RFC 8628), ID token refresh, and the dev-mode static-token
// exchange at /auth/token-login.
//
// Threat model:
//   - Another local process may race to receive the loopback redirect or
//     forge one. The listener binds 127.0.0.1 on a random port, the
//     request carries an unguessable state that the callback must echo
//     (a mismatch aborts the login), and the code is useless without the
//     PKCE verifier, which never leaves this process.
//   - A malicious or confused IdP response: ID tokens are verified with
//     go-oidc (issuer, audience = client id, signature from the issuer's
//     JWKS, expiry) and, for the redirect flow, the nonce.
//   - TLS: the hub and the IdP are reached over HTTPS only, trusting the
//     system roots plus an explicitly given CA file each.
//   - Tokens are bearer credentials: they are never printed or logged,
//     only stored through tokencache (0600 files in a 0700 directory).
package login
