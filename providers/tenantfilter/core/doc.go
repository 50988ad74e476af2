// Package core is the tenant filter's filtering core, shared by the
// standalone listener and the hub plugin: an http.Handler that gives each
// tenant user a filtered view of one downstream cluster.
//
// # Threat model
//
// The caller is assumed hostile and may be an admin of some tenant (or of
// some workspace on the hub). The core trusts only the Caller its front end
// put in the request context; it never reads credentials and strips every
// header by which a client could speak for someone (Authorization,
// Impersonate-*, X-Remote-*, X-Kedge-*) before anything reaches the
// downstream.
//
// Two kinds of downstream call exist, and the difference is the whole
// security argument:
//   - Filtered reads use the provider's own credential, which typically
//     sees everything. They are made only after the core decided what the
//     caller may see (namespace names injected into the label selector, a
//     named object checked against the caller's view, list items removed),
//     and the caller is logged for each, because the downstream's audit log
//     shows only the provider.
//   - Everything else is sent with the provider's credential plus
//     Impersonate-User/Group/Uid for the caller (groups filtered by the
//     configured regexp and ignore list), so the downstream's RBAC decides.
//
// Invisible namespaces answer 404 like missing ones (a 403 would confirm
// that they exist). The create-if-missing rewrite turns a 403 into a 404
// only after an authoritative lookup with the provider's credential found
// the namespace missing; a failed lookup keeps the 403. Namespace creation
// with the provider's credential happens only in a tenant the caller owns,
// with the tenant labels and ownerReference set by the core (client-set
// Tenant ownerReferences are dropped), and an update or patch with the
// provider's credential is dry-run first and refused if it would move the
// namespace to another tenant. Once an error has been written nothing is
// forwarded.
//
// Caches: everything is keyed by object name and judged per caller at
// request time; nothing computed for one caller is reused for another.
package core
