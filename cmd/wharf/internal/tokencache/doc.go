// Package tokencache stores the CLI's OIDC tokens (ID token, refresh token,
// expiry) on disk, one file per issuer and client id.
//
// Threat model: the cache holds bearer credentials equivalent to the
// user's session. Files are created 0600 inside a 0700 directory, written
// atomically (temp file + rename) so a crash never leaves a truncated
// token, and an existing directory with looser permissions is refused
// rather than silently used. Concurrent invocations (several kubectl
// processes) serialise on an advisory lock so that a rotating refresh
// token is spent exactly once. Tokens are never logged or printed; errors
// name the file, not its contents.
package tokencache
