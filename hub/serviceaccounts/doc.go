// Package serviceaccounts issues and verifies the hub's service-account
// tokens: the TokenRequest subresource (serviceaccounts/token, what
// kubectl create token calls), the bearer-token authenticator that fills
// the service-account slot of hub/authn's union, and the authorizer step
// that confines a token to the workspace it was issued in.
//
// It also serves what lets others verify those tokens: TokenReview
// (authentication.k8s.io/v1, create only) and the issuer discovery
// documents /.well-known/openid-configuration and /openid/v1/jwks.
//
// A token is a JWT signed by one hub-wide key (ES256 or EdDSA), shared by
// every replica through etcd (bootstrap.SharedSecret) or read from
// --service-account-signing-key-file. Its claims are the standard iss,
// sub, aud (always an array), exp, iat, nbf and jti, upstream's
// "kubernetes.io" claim (namespace, serviceaccount{name,uid}, and
// secret{name,uid} when bound to a Secret) and a private "wharf.dev"
// claim binding it to one ServiceAccount: logical cluster id, namespace,
// name and uid. Both claims must agree. Tokens minted before the
// kubernetes.io claim existed (aud a string, wharf.dev only) still verify.
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
//   - boundObjectRef: a token bound to a Secret (TokenRequest's
//     boundObjectRef, kind Secret of core/v1) dies with it: every request
//     re-reads that Secret in the token's workspace and namespace and
//     compares its uid, as for the ServiceAccount. Upstream tolerates a
//     Secret being deleted for a minute; the hub refuses at once. Pods and
//     Nodes do not exist on the hub and are refused with upstream's
//     "cannot bind token to object of type" (upstream answers 404 for a
//     missing Pod).
//
// # TokenReview
//
// A review's answer is hub-wide information: it names the identity of a
// token that may belong to another workspace. The attacker considered is
// the admin of some workspace (who holds create tokenreviews there)
// reviewing tokens they intercepted or guess, and a provider reviewing
// tokens in a workspace that enabled it.
//
//   - A token confined to a workspace (every service-account token) is
//     reported authenticated only by a review sent to that workspace.
//     Anywhere else the answer is that of a wrong token, word for word
//     (authenticated false, error "invalid bearer token"): whether the
//     token exists, or its ServiceAccount still does, is not told.
//   - Any other identity (static tokens, OIDC ID tokens, provider tokens)
//     is reported only where it may use the workspace (the hub's
//     workspace-access check, "access" on "/"), elsewhere as a wrong
//     token. So a workspace admin learns nothing about people who have
//     nothing to do with their workspace; about those who do, nothing
//     they could not learn from those people's requests.
//   - Every failure has the same error text; why a token failed stays in
//     the hub's log (V(4), token hash only).
//   - Guessing: each review of a guessable token (not a JWT) that is not
//     reported authenticated is charged to the reviewer's client address
//     on the failed-authentication budget of hub/authn, and a reviewer
//     over budget gets 429 before the token is evaluated, unless it
//     authenticated from that address before. A review is thus exactly
//     one guess, like a request carrying that token, never an amplifier.
//     A valid token confined elsewhere is charged too, so the throttle
//     tells nothing either. JWTs are not charged: none can be guessed.
//   - Dry run: a review stores nothing, so, as upstream, dryRun changes
//     nothing: it is evaluated and charged exactly as a real review.
//   - The token is judged with a fresh context holding only the target
//     audiences: nothing of the reviewer's request influences the answer,
//     and no home workspace is created for the reviewed person.
//   - Audiences as upstream: spec.audiences, else the hub's API audience;
//     a service-account token must carry one of them and the answer's
//     audiences are the intersection; static and OIDC tokens are
//     audience-agnostic (accepted only when the hub's audience is asked).
//
// # Issuer discovery
//
// The OpenID configuration and the JWK set carry only public data (the
// issuer and the public key). As upstream they need authorization: the
// hub grants them to every service account in its own workspace (as
// upstream's system:service-account-issuer-discovery binding to
// system:serviceaccounts) and otherwise to what the workspace's RBAC
// grants on those non-resource paths. They are the same in every
// workspace and at the hub's root.
//
// Not covered: key rotation is manual (replace the key, which invalidates
// every outstanding token, and the JWK set has one key); the signing key
// in etcd is as safe as etcd access is.
package serviceaccounts
