// Package registry builds the REST storage of the built-in types the hub
// serves in every workspace: core/v1 Namespace, ConfigMap, Secret and
// ServiceAccount, rbac.authorization.k8s.io/v1 and coordination.k8s.io/v1
// Lease.
//
// Each resource is a genericregistry.Store plus a strategy, as in
// sample-apiserver. The upstream strategies live in k8s.io/kubernetes, which
// cannot be imported, so a single table-driven strategy carries the
// per-type defaulting and validation these types need. Partitioning by
// workspace happens below, in the storage decorator; nothing here knows
// about clusters.
package registry
