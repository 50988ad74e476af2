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
// # Existence is not an answer (issue 11.9)
//
// Threat: an authenticated caller (every person is admin of a home whose
// path derives from their user name) probes /clusters/<path-or-id>/... to
// learn which workspaces, and so which users, exist. Rule: a workspace the
// caller may not see answers exactly like a missing one, on every route
// that takes a workspace, for every verb and write path.
//
// That is decided by the authorizer, not here: its visibility step
// (hub/server/visibility.go) denies everybody whom no binding of the
// workspace names, whether it exists or not, with one reason ("workspace
// access not permitted", kcp's wording) inside upstream's Forbidden
// message, which names only what the caller sent. Only callers who passed
// authorization reach the 404 here: hub administrators and people with a
// grant in the workspace, who may know it exists (for a missing child of
// a visible workspace the visibility step already denied). So this filter
// may answer honestly, and must never answer before authorization: the
// outer filter's malformed-prefix 404 depends on the URL alone.
//
// A request without /clusters/ addresses root. Requests whose context ends
// up without a cluster are refused by the storage layer, so a bug here fails
// closed.
package filters
