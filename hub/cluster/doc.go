// Package cluster names logical clusters and carries them through a request.
//
// Every workspace owns one logical cluster. A workspace is addressed either by
// its path (root:acme:team-a) or by its logical cluster id, 16 lowercase
// base36 characters that stay fixed for the workspace's life. Storage only
// ever sees ids: paths can be renamed in the future, ids cannot.
//
// The context helpers come in WithX/XFrom pairs. The storage layer refuses any
// call whose context carries no cluster, so forgetting to set one fails closed
// instead of exposing every workspace.
package cluster
