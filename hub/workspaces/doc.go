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
package workspaces
