// Package storage partitions the apiserver's storage by logical cluster.
//
// Upstream registries compute etcd keys as <prefix>/[<namespace>/]<name> and
// know nothing about workspaces. This package sits between the registries and
// the watch cache as a generic.StorageDecorator and rewrites every key to
//
//	<prefix>/<cluster>/[<namespace>/]<name>
//
// where <prefix> is /<group>/<resource> (group "core" for the legacy group),
// below the etcd path prefix /registry.
//
// Threat model. The decorator is the last line of workspace isolation: a
// handler, controller or admission plugin that forgets to put a cluster in its
// context must not see, and above all must not write, every workspace. So:
//
//   - A call without a cluster in its context returns an error. There is no
//     default cluster.
//   - A wildcard context (every cluster) is honoured only by list and watch of
//     a whole resource, never by a namespaced list, a get or a write.
//   - Every stored object carries the wharf.dev/cluster annotation, set here
//     and overwriting whatever the client sent, because the watch cache keys
//     objects by it. A client forging it cannot move an object into another
//     workspace: the key is derived from the request, not from the object.
//
// The watch cache stays on. It runs below this decorator and sees all
// clusters; its key function derives the cluster segment from the annotation,
// so cached keys equal etcd keys and prefix filtering isolates lists and
// watches per cluster.
//
// That equality is checked, not assumed, because etcd may hold values the
// hub never wrote (an external etcd shared with others, data of an older
// hub, etcdctl). A value-transformer wrapper (guard.go), the one layer that
// sees the etcd key of every value read, verifies that each value decodes
// and that the key computed from the object (name, namespace, cluster
// annotation) is exactly the key it was read from. Otherwise:
//
//   - The value is skipped, never blocking: one bad key used to stop the
//     resource's watch cache from starting, in every workspace, forever.
//     The key and the reason (never the value) are logged, and
//     wharf_storage_skipped_objects_total{resource,reason} counts it.
//   - It is never served in any workspace, wildcard included: a value at
//     cluster A's key annotated with cluster B would otherwise appear in
//     B's cached lists. In the cache it is a stand-in at its true key,
//     which lists and watches drop; a get answers 500 and writes to the key
//     are refused, so the hub never overwrites data it could not read. The
//     key is repaired in etcd.
//   - The stand-in's marker annotation (wharf.dev/quarantined-key) is
//     stripped from every write and, if found in a stored value, is itself
//     a reason to skip it, so nobody can steer the cache key of an object.
//
// The check decodes every value read from etcd. The store does not decode
// it again: the guard hands the object it checked to the store's decode of
// the same bytes (handoff.go), so the object served is the object checked;
// when the hand-off misses, the store decodes the bytes itself as before.
//
// A watch cache's history of replaced and deleted objects is bounded
// (history.go) and attributed to tenants (historyshare.go): one tenant's
// rewrites of large objects get 429 once her share is used, so that she
// alone cannot make the cache relist and close everybody's watches.
package storage
