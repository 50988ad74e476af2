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
//
// # Threat model
//
// The attacker is a person, and so admin of their home workspace, or
// someone a workspace admin granted a little (view plus write on some RBAC
// resource, say). What this package holds against them:
//
//   - No RBAC write grants more than its author holds (GuardedStore, with
//     hub/authz/rbac's EscalationChecker), on every write path: create,
//     update, patch of any kind, server-side apply (which creates through
//     update) and dry runs of each. Creates are checked before the store;
//     updates inside the store's transformer chain, on the object the
//     update produces, against the stored one. As upstream, the only update
//     exempt is one that changes nothing but ownerReferences and finalizers
//     (plus managedFields, selfLink and TypeMeta, which grant nothing).
//     Labels are checked: ClusterRole aggregation follows them.
//   - Namespaces are served without deletecollection, as kube-apiserver
//     serves them (NamespaceStorage): one request would otherwise delete
//     every namespace of a workspace, default and kube-system included.
//     The verb answers 405 MethodNotAllowed and is absent from discovery.
//     Named deletes of default and kube-system are refused by lifecycle
//     admission (hub/namespaces) on every variant of the request.
//   - A namespace's deletion hold is spec.finalizers, which only
//     namespaces/finalize changes (RBAC checks it as that subresource); the
//     main resource and namespaces/status keep it on update, patch,
//     server-side apply and dry runs alike, so no client write but an
//     authorized finalize skips the deletion of a namespace's content. The
//     metadata finalizer of earlier hubs is migrated to it on any write.
//     As upstream, whoever may finalize may release a namespace early; its
//     content then stays in etcd under the workspace's own prefix, where
//     no other workspace reaches it, until the namespace is deleted again
//     or the workspace is.
package registry
