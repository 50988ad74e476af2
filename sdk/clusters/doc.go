// Package clusters is what a provider needs to watch its resources across
// the workspaces that enabled it, and to act in one of them.
//
// A plain client-go informer on <hub>/clusters/* keys objects by
// namespace/name, so same-named objects of two workspaces collapse into one
// cache entry and the last event wins. Every object the hub serves carries
// its logical cluster in the wharf.dev/cluster annotation, written by the
// hub alone; this package keys and indexes on it:
//
//   - [Key] and [SplitKey]: "<cluster>|<namespace>/<name>" (kcp's form),
//     "<cluster>|<name>" for cluster-scoped objects;
//   - [NewInformer]: an informer over a wildcard list and watch, whose
//     store uses that key and always has the [ByCluster] and
//     [ByClusterNamespace] indexes;
//   - [Lister]: Get and List within one cluster, from that store;
//   - [Wildcard] and [ForCluster]: rest configs for <hub>/clusters/* (list
//     and watch only; the hub refuses everything else there) and for one
//     workspace, by path or logical cluster id.
//   - [NewResourceInformer] and [ListWatch]: NewInformer over one
//     resource of every workspace through a dynamic client, without the
//     list/watch plumbing each controller would repeat;
//   - [Clients]: one client per workspace, built with ForCluster on first
//     use and kept, for the writes back to an object's own workspace.
//
// A provider's own identity may list and watch only its own API groups
// across workspaces (whose objects exist only where it is enabled); a
// controller that reacts to an object writes back with ForCluster on the
// object's cluster, so a write can never land in another workspace than
// the one the object came from.
//
// Like the rest of sdk, this package imports nothing from the hub, the
// apiserver or etcd.
package clusters
