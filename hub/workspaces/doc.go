// Package workspaces owns the mapping between workspace paths and logical
// cluster ids, the Workspace REST storage, and workspace deletion.
//
// The mapping lives in etcd, not in memory, so that every hub replica
// resolves a path to the same id:
//
//	<etcd-prefix>/wharf.dev/logicalclusters/<id>   -> {"path": "root:acme"}
//	<etcd-prefix>/wharf.dev/workspacepaths/<path>  -> <id>
//
// Both keys are written in one transaction that fails if the path is taken,
// which makes allocation safe across replicas. Each replica keeps an
// in-memory copy fed by an etcd watch and falls back to a quorum read on a
// miss, so a workspace created through one replica is served by another
// immediately, not after its watch catches up.
//
// # Threat model
//
// The attacker is any person: admin of their own home and therefore of
// every Workspace below it. They may create, update, patch, apply, delete
// and deletecollection Workspaces there, by path or by id, and dry-run all
// of it. What they must not do is make hub-wide state (which logical
// cluster a Workspace is, what deletion purges) point at a workspace they
// do not own. The rules:
//
//   - The index is the only record of which cluster a Workspace is. It is
//     written by Allocate (from REST.Create), MarkTerminating and Release,
//     never from a request body. Deletion and orphan collection read it
//     from etcd (Index.Lookup, Index.Child), not from the Workspace object
//     and not from a replica's possibly stale copy.
//   - Status is the hub's. REST.Create sets it from the allocation; after
//     that only REST.hub (hubStrategy) changes it, a store copy that is in
//     no storage map and so cannot be reached by any request, whatever the
//     identity. workspaces/status is served read-only: PUT and every PATCH
//     (merge, JSON, strategic, apply; dry run or not) answer 405
//     MethodNotAllowed for everyone, system:masters included, as kcp keeps
//     Workspace status controller-owned. A write of the main resource
//     drops status changes, as kube-apiserver does for resources with a
//     status subresource, and keeps the cleanup finalizer: without it the
//     object would go before its cluster is purged.
//   - Every create is REST.Create: POST, server-side apply of a new
//     Workspace (REST.Update routes create-on-update there, so the result
//     has its cluster, finalizer and creator binding, as SSA create works
//     on kube), and the dry runs of both, which allocate, initialize and
//     record nothing. The store's BeginCreate refuses a create that did not
//     come through REST.Create, so a new upstream create path fails closed
//     instead of squatting a name with no cluster.
//   - Deletion: delete and deletecollection both only mark the object
//     (the finalizer holds it). The Controller purges what the index
//     records for (parent cluster, name): the parent cluster comes from the
//     wharf.dev/cluster annotation, which storage sets from the key and
//     overwrites on every write; the name is immutable. It purges that
//     cluster and the index's descendants of its path, never a path without
//     a parent (root), and releases records deepest first. Before the
//     purge it deletes that cluster's child Workspaces and content through
//     the API, addressed as /clusters/<id> with the id the index records,
//     and only objects whose wharf.dev/cluster annotation (set by storage
//     from the key) names that id: hub-wide resources that answer in every
//     workspace (CRDs) are never deleted with one. A tenant's finalizer can
//     hold the deletion for at most the grace period, counted on the
//     Controller's clock from the deletion timestamp, which the store sets.
//   - Orphans: a record is claimed by any Workspace stored under its name
//     in its parent, whatever that object's status says. Only unclaimed
//     records older than orphanGrace (on the Controller's clock) go.
//   - Names are DNS labels, so ':' , '/', '*' and upper case cannot make a
//     path that parses differently. A name that reads as a cluster id is
//     only a path segment: paths start at root and contain ':', ids never.
package workspaces
