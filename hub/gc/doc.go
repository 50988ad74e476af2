// Package gc is a cluster-aware garbage collector for ownerReferences.
//
// Upstream's collector discovers every resource and watches it through
// clients that see one cluster; here the same ownership semantics are applied
// per logical cluster:
//
//   - background: once every owner of an object is gone, the object is
//     deleted (and its own dependents follow, one level at a time);
//   - foreground: an owner being deleted with the foregroundDeletion
//     finalizer first has its dependents deleted (in the foreground too);
//     the finalizer is dropped once no dependent with blockOwnerDeletion
//     remains;
//   - orphan: an owner being deleted with the orphan finalizer has its
//     references removed from its dependents, then the finalizer dropped.
//
// What it watches. The hub's built-in kinds and its own kinds (Workspaces,
// CatalogEntries, ProviderBindings) are read through their registry stores
// in process (New). Custom resources live in the
// apiextensions handler's storage, which the hub cannot reach, so
// WatchCustomResources follows the CRDs (global) and runs one monitor per
// established CRD: a metadata-only informer over /clusters/* (every
// workspace at once) through a loopback client, whose writes go through the
// custom resource handler like a client's. A monitor starts when its CRD is
// established, restarts when the served kind, version or scope changes, and
// stops when the CRD is deleted or starts terminating; its objects then
// leave the graph, so an owner in foreground deletion never waits for
// dependents the collector can no longer see. Owners wait (at most
// syncGrace) for new monitors to list before acting on their dependents.
//
// Isolation. The graph is keyed by (logical cluster, uid), and an owner
// reference is resolved in its dependent's cluster only: an object of
// workspace B naming the uid of an object of A has no owner in B and is
// collected, and A's object is neither touched nor kept waiting by it.
// Before collecting, an owner missing from the graph is read back (by name,
// in the dependent's cluster and, for namespaced owners, namespace); one of
// that name with another uid is a different object, so the owner counts as
// gone, as upstream verifies owners by uid. The loopback transport refuses
// any request whose context names no cluster, and wildcard requests other
// than list and watch.
//
// An owner reference to a kind the collector does not watch (no such CRD,
// not yet established, or being deleted) is assumed to exist: the collector
// never deletes an object because it could not see its owner. When a kind
// becomes known, the objects naming it are looked at again.
package gc
