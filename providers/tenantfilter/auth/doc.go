// Package auth is the standalone tenant filter's front door: it turns an
// incoming request into a core.Caller, or answers 401 with a Kubernetes
// Status. It implements capsule-proxy's authentication types (BearerToken,
// TLSCertificate, XForwardedClientCert), tried in the configured order with
// the first success winning, and capsule-proxy's client impersonation, but
// reviewed.
//
// # Threat model
//
// The attacker holds valid credentials for some tenant (they may administer a
// whole tenant) and can send arbitrary HTTP to the listener. They want to act
// as somebody else or with more groups than they have.
//
//   - Forged certificates in a header. X-Forwarded-Client-Cert (or the name
//     given by --xfcc-header-name) is an assertion by a TLS-terminating proxy.
//     It is believed only when the TCP peer (r.RemoteAddr, never
//     X-Forwarded-For) lies in --trusted-proxy-cidrs; with no CIDRs the type
//     refuses every such header outright (401), so a client cannot pick its
//     identity by typing a header. Even from a trusted proxy the certificate
//     must chain to --client-ca and be valid at the (injectable) clock's now;
//     only the last XFCC element is used, the one the adjacent trusted proxy
//     appended: earlier elements were written by hops nobody vouches for.
//   - Client impersonation. Impersonate-User/-Group/-Uid headers are honoured
//     only after SubjectAccessReviews on the downstream (verb impersonate, as
//     kube-apiserver checks them) allow the authenticated caller each of
//     them. Without the right, all of them are stripped and the request runs
//     as the caller: a tenant owner typing "Impersonate-Group:
//     system:masters" gets nothing extra. Impersonate-Extra-* headers are
//     always deleted (the provider never forwards extras), as is every header
//     named in Connection, which a proxy would otherwise drop only after we
//     set our own headers. SkipImpersonationReview (dangerous, off by
//     default) is capsule-proxy's escape hatch for trusted set-ups.
//   - Token handling. A bearer token is never logged, never put into an
//     error or a Status, and never used as a map key: the TokenReview cache
//     keys on its SHA-256. Successful reviews are cached briefly (10 s),
//     failures more briefly (2 s), so a revoked token stops working quickly
//     and a guessing client still costs the downstream at most one review
//     per distinct token per failure TTL. Transport errors are not cached
//     and answer 503, so a downstream hiccup cannot pin a valid user out.
//   - Credentials never travel on. Authorization, the websocket bearer
//     subprotocol, the XFCC header and every client Impersonate-* header are
//     removed before the core sees the request; the core forwards with the
//     provider's own credential and its own Impersonate-* headers.
//   - Denials look alike: every authentication failure is the same 401
//     "Unauthorized" Status, whichever type failed and why; the reason goes
//     to the log (without the credential) only.
package auth
