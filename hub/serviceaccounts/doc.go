// Package serviceaccounts issues and verifies the hub's service-account
// tokens: the TokenRequest subresource (serviceaccounts/token, what
// kubectl create token calls), the bearer-token authenticator that fills
// the service-account slot of hub/authn's union, and the authorizer step
// that confines a token to the workspace it was issued in.
//
// A token is a JWT signed by one hub-wide key (ES256 or EdDSA), shared by
// every replica through etcd (bootstrap.SharedSecret) or read from
// --service-account-signing-key-file. Its claims are the standard iss,
// sub, aud, exp, iat, nbf and jti plus a private "wharf.dev" claim binding
// it to one ServiceAccount: logical cluster id, namespace, name and uid.
//
// The identity is system:serviceaccount:<ns>:<name>, uid the
// ServiceAccount's uid, groups system:serviceaccounts,
// system:serviceaccounts:<ns> and system:cluster:<cluster id>, and the
// extra key wharf.dev/cluster carrying the cluster id.
//
// # Threat model
//
// Attacker capabilities considered: holding a valid token and using it
// somewhere else (another workspace, /clusters/*, a provider backend of
// another workspace), keeping a token after its ServiceAccount was
// deleted, forging or altering tokens (alg "none", another key, HMAC with
// the public key, edited payload), replaying tokens minted for another
// audience, and reading hub logs.
//
//   - Only the algorithm of the hub's own key is accepted and the
//     signature is checked against that key alone; "none", HMAC and tokens
//     of other keys never verify. The payload is only trusted after that.
//   - iss must be the hub's issuer, aud must name one of the hub's API
//     audiences (a token minted for "vault" does not work on the hub), and
//     exp/nbf/iat are checked with one minute of leeway for clock skew.
//   - Revocation: every request re-reads the ServiceAccount from storage
//     with a consistent read in the token's workspace and compares the
//     uid. Deleting the ServiceAccount revokes its tokens at once, and a
//     new ServiceAccount of the same name does not revive them. Nothing
//     is cached, so there is no cache to invalidate; the cost is one etcd
//     read per request (see BenchmarkAuthenticate in hub/authn).
//   - Workspace binding: the authorizer step Binding runs before every
//     other authorizer and denies (403) any request of a bound identity
//     whose workspace is not the token's, including /clusters/* and the
//     provider backends' workspace access check. A RoleBinding naming
//     system:serviceaccounts in another workspace therefore grants a
//     foreign token nothing. A bound identity is any with the extra
//     cluster.ConfinedExtra (wharf.dev/cluster): these tokens, and every
//     impersonated identity, which the hub confines to the workspace of
//     the impersonation (hub/server). An identity with several values is
//     bound to none and denied everywhere.
//   - Tokens never reach logs: errors carry authn.TokenHash at most.
//   - Minting needs create on serviceaccounts/token in the workspace;
//     lifetimes are bounded (10 minutes to --service-account-max-token-
//     expiration, 48h by default).
//   - A dry-run TokenRequest is checked exactly as a real one (same
//     errors, the ServiceAccount must exist) but mints nothing: a dry run
//     has no effect, and a signed token is a working credential. Upstream
//     signs one anyway; the hub deliberately does not. A name or
//     namespace in the body other than the URL's is refused (422), as
//     upstream.
//
// Not covered: boundObjectRef (tokens bound to a Pod or Secret) is
// refused, since the hub runs no Pods; key rotation is manual (replace
// the key, which invalidates every outstanding token); the signing key in
// etcd is as safe as etcd access is.
package serviceaccounts
