// Package namespaces gives every workspace upstream namespace lifecycle:
// objects can only be created in a namespace that exists and is not being
// deleted, the default and kube-system namespaces cannot be deleted, and
// deleting a namespace removes everything in it before the namespace goes.
//
// Upstream's NamespaceLifecycle admission plugin and namespace controller
// look namespaces up without a workspace, which the hub's storage refuses;
// these replacements do the same work within the request's logical cluster.
//
// Deletion is held by the metadata finalizer ContentFinalizer (upstream
// uses spec.finalizers and a /finalize subresource; a metadata finalizer
// lets the generic store do the bookkeeping). While it is held the
// namespace reports phase Terminating.
//
// default and kube-system are immortal: admission refuses their deletion
// whatever the options (dry run, preconditions, propagation policy, grace
// period) and whether or not they still carry the content finalizer, and
// takes the name from the stored object, so that a collection delete, whose
// request names nothing, is covered too. The Namespace storage serves no
// deletecollection at all (hub/registry), as kube-apiserver.
package namespaces
