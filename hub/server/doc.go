// Package server assembles wharf-hub in the sample-apiserver style:
// Options → Complete → Validate → Config → Complete → New → PrepareRun → Run.
//
// # Threat model of the authorizer chain
//
// The attacker is anybody without a token (step 6), or any person with a
// token, and therefore admin of their own home workspace: workspace RBAC
// grants them "*" on "*" there, as upstream's cluster-admin does. Every decision is about one workspace
// (logical cluster); the chain (newAuthorizer) must never let a grant in
// one workspace act in another or hub-wide. In order:
//
//  1. hub-guards denies what no workspace grant may allow: writing
//     hub-wide CustomResourceDefinitions, and impersonating hub identities
//     with any impersonation verb upstream v0.37 knows (impersonate,
//     impersonate:user-info, impersonate:serviceaccount,
//     impersonate:arbitrary-node, impersonate:associated-node):
//     system:masters, providers (system:wharf:provider:*), nodes, every
//     other system: user
//     or group but system:authenticated and the service-account groups,
//     "*" (upstream's many-at-once check), and hub-owned extras
//     (wharf.dev/*). The confinement extra is allowed with the request's
//     own workspace as value only. impersonate-on:<mode>:<verb> carries
//     the request's attributes, not the identity, and is left to RBAC:
//     upstream checks impersonate:<mode> on the identity as well.
//  2. process-wide denies every non-resource path that is not a
//     workspace's own (upstream's discovery and public-info paths: /api,
//     /apis, /openapi, /version, /healthz, /livez, /readyz) to everybody
//     but hub administrators, whatever a workspace's RBAC says: /metrics,
//     /debug/* (pprof, flags), /logs, /flagz, /statusz and whatever a
//     library adds later are one process shared by every workspace
//     (processwide.go; an allowlist, so new endpoints are closed). The one
//     exception is upstream's scraper group system:monitoring: GET of
//     /metrics and the health paths with their sub-paths, without a
//     /clusters/ prefix, for an identity not confined to a workspace
//     (builtinpolicy.go monitoringAllows). Only the operator can put an
//     identity in it (static tokens, unprefixed IdP groups): step 1
//     refuses to impersonate it and service accounts never carry it.
//  3. serviceaccount-binding denies a confined identity (cluster.ConfinedTo:
//     a service-account token, or an impersonated identity) everywhere but
//     in its own workspace: another one, /clusters/* or an unresolved one.
//  4. impersonation-confinement allows impersonating the confinement extra
//     with the request's own workspace, which the hub asks for itself.
//  5. Hub administrators are allowed; then the scope of provider
//     identities applies (hub/providerauth).
//  6. public-health allows the one thing an anonymous caller may do: GET
//     exactly /livez, /readyz or /healthz, as upstream's
//     system:public-info-viewer binding to system:unauthenticated
//     (builtinpolicy.go). hub/authn authenticates anonymous callers only
//     for GET and HEAD of those paths and their clean sub-paths, without a
//     /clusters/ prefix and without any credential (sub-paths and HEAD are
//     then denied, 403 as kube-apiserver's; the process-wide guard keeps
//     sub-paths for hub administrators); every other request without a
//     valid credential is 401 before authorization. No other step allows
//     system:anonymous or system:unauthenticated anything: the built-in
//     grants name system:authenticated and service accounts, and the
//     visibility step denies whomever no binding names (root's bindings
//     are hub administrators' to write).
//     Right after it, monitoring allows exactly what step 2 let through
//     for system:monitoring; it never applies inside a workspace, so the
//     group gains nothing there.
//  7. workspace-visibility denies, with one fixed reason, everybody whom no
//     binding of the workspace names (nor its own service-account token),
//     and does so whether the workspace exists or not: a workspace one
//     cannot see looks the same as a missing one (visibility.go). Only
//     past this step can a caller learn that a workspace exists (a 404).
//  8. Upstream's bootstrap grants to every authenticated caller
//     (system:basic-user, system:discovery, system:public-info-viewer:
//     builtinpolicy.go) for the rest; the request workspace's RBAC; what
//     none allowed is denied with no reason, as kube-apiserver's RBAC.
//
// # Impersonation
//
// Upstream's impersonation filter runs between authentication and
// authorization, after /clusters/<x> is stripped (hub/filters): it sees no
// workspace, and it caches allowed impersonations for about 10 s keyed by
// requester, wanted user and request attributes. So every impersonating
// request also asks for the confinement extra (wharf.dev/cluster = the
// request's workspace; withImpersonationConfinement). That puts the
// workspace into every key of upstream's caches, and it confines the
// impersonated identity to the workspace where the impersonation was
// allowed, as service-account tokens are (step 2). Clients cannot choose
// the value: any other is denied (step 1), and an identity with two values
// is confined to nothing. Consequences:
//
//   - an impersonation allowed in one's home is never reused elsewhere,
//     by path, by id, in root or across /clusters/*, within the cache
//     lifetime or after it;
//   - an impersonated identity has no home and learns nothing about the
//     person of that name: /api/whoami and SelfSubjectReview report at
//     most the workspace of the impersonation (hub/home IsPerson);
//   - impersonating in /clusters/* is refused, for administrators too
//     (no workspace to confine to);
//   - a confined identity is never a hub administrator (admins.has, and
//     the RBAC quota's and escalation check's exemptions), so the names
//     and groups of --admin-user and --admin-group are impersonated like
//     any other (not refused: a refusal for them alone would tell a
//     workspace admin who the administrators are);
//   - upstream's constrained serviceaccount and node modes admit a bare
//     user name only, so with the extra they never apply: a service
//     account is impersonated through the legacy "impersonate" verb (on
//     serviceaccounts), and nodes not at all;
//   - the provider routes do not impersonate: hub/proxy strips every
//     Impersonate-* header, and the provider sees the authenticated caller.
//
// # Decision caches
//
// The RBAC authorizer (hub/authz/rbac) keeps rules per workspace, each
// partition behind its own lock (one tenant's huge aggregated ClusterRole
// delays only that tenant), and caches no decision. upstream's impersonation caches key on the
// workspace as above. The home manager caches ownership (path → user
// name), not access. No other authorization or impersonation decision is
// cached.
//
// # In-flight budgets
//
// Upstream's max-in-flight filter is switched off (one budget shared by
// every tenant: attack review B10). hub/fairness bounds each tenant's
// share, keyed by the caller's workspace tree, in seats that follow each
// request's cost, as the flow control of upstream's priority-and-fairness
// filter (Config.FlowControl): right after authentication and
// impersonation, before authorization (so denied requests count, issue 24
// B6) and before any handler reads a body. Its own in-flight limiter
// bounds the provider routes; see its threat model.
//
// # Shutdown
//
// On SIGTERM (drain.go): /readyz fails at once (the generic server's
// shutdown check); a pre-shutdown hook hands the single-replica providers
// over while the API still serves; after --shutdown-delay the server stops
// listening; requests and streams in flight, the provider routes' and
// hijacked connections included (counted outside the whole chain), get
// --shutdown-grace; then the plugins stop and embedded etcd closes last.
// A drain that cannot finish in time cuts what is left and still exits 0.
package server
