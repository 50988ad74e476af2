// Package gc is a cluster-aware garbage collector for ownerReferences.
//
// Upstream's collector discovers every resource and watches it through
// clients that see one cluster; here the same ownership semantics are applied
// per logical cluster, over the hub's own storage:
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
// Owners and dependents must be in the same logical cluster (and, for
// namespaced owners, the same namespace), as upstream requires them to be in
// the same cluster. An owner reference to a kind the collector does not
// watch is assumed to exist: the collector never deletes an object because
// it could not see its owner. Ownership is tracked for the hub's built-in
// resources; custom resources are neither collected nor, as owners, able to
// cause collection.
package gc
