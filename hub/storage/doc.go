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
package storage
