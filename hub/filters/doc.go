// Package filters holds the hub's HTTP filters that address workspaces.
//
// Two filters split the work, because the generic handler chain
// authenticates in between:
//
//   - WithClusterPath runs outermost, before authentication. It strips
//     /clusters/<path-or-id> from the URL so that the upstream request-info
//     resolver sees an ordinary /api or /apis path, and it resolves the
//     workspace from the in-memory index only. It never answers a client
//     itself except for a malformed prefix, so an unauthenticated caller
//     learns nothing about which workspaces exist and cannot make the hub
//     read etcd.
//   - WithClusterResolution runs innermost, after authentication and
//     authorization. It completes resolution with a quorum read when the
//     in-memory index missed, answers 404 for unknown workspaces, and admits
//     the wildcard /clusters/* only for list and watch by privileged users.
//
// A request without /clusters/ addresses root. Requests whose context ends
// up without a cluster are refused by the storage layer, so a bug here fails
// closed.
package filters
