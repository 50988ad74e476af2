// Package enablement decides where a provider's APIs may be used.
//
// Custom resource definitions are hub-wide, but a provider's resources are
// usable only in workspaces holding a ProviderBinding for it. The Index
// answers "is provider P enabled in cluster C" and "which provider owns API
// group G" from two informers (bindings in every workspace, catalog
// entries in root). WithEnablement answers 404 for a provider-owned group
// in a workspace that has not enabled it, exactly as if the resource did
// not exist there. The Controller sets up and tears down what a binding
// grants: for providers with EdgeProxyAccess, an RBAC grant of the proxy
// verb on edges to the provider's identity; on deletion it also purges the
// provider's custom resources in that workspace, so that nothing of it
// survives disabling (and a wildcard list by the provider cannot see data
// of a workspace that disabled it).
//
// Threat model: a workspace user must not reach a provider's resources in
// a workspace where no one with RBAC permission to create providerbindings
// enabled it, and no tenant may change which groups answer elsewhere. A
// binding being deleted counts as disabled at once. Until the informers
// have synced, the Index reports nothing enabled: requests fail closed
// (404) and /readyz stays false.
//
//   - Catalog state comes only from root: the entry informer lists and
//     watches root's logical cluster alone, and the Index also ignores any
//     entry whose recorded cluster (the wharf.dev/cluster annotation the
//     storage decorator overwrites, not a client field) is not root. An
//     entry a person writes in their home (the catalog storage refuses
//     that too) can neither own a group nor stand in for a provider.
//   - A claim of a reserved group (catalog.ReservedGroup: the hub's own
//     and Kubernetes' groups) is ignored wherever it comes from, so no
//     entry can switch RBAC, workspaces or the catalog itself off; so is a
//     claim of a shipped provider's group by any other entry
//     (catalog.MayOwn), however old.
//   - A binding enables its provider in the workspace the storage recorded
//     for it, and only for the groups the provider owns (the oldest claim
//     wins), so it cannot enable anything for another workspace or reach
//     another provider's data.
//   - The edge-proxy grant has predictable names, so a workspace admin
//     may create them first; the Controller rewrites whatever it finds
//     under them to exactly the grant (one rule, one subject, its own
//     role; a binding with another roleRef is replaced), so the hub never
//     binds a provider to more than the grant.
package enablement
