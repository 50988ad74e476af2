// Package namespaces gives every workspace upstream namespace lifecycle:
// objects can only be created in a namespace that exists and is not being
// deleted, the default and kube-system namespaces cannot be deleted, and
// deleting a namespace removes everything in it before the namespace goes.
//
// Upstream's NamespaceLifecycle admission plugin and namespace controller
// look namespaces up without a workspace, which the hub's storage refuses;
// these replacements do the same work within the request's logical cluster.
//
// Deletion follows upstream's model: a new namespace gets spec.finalizers
// "kubernetes"; its first delete marks it Terminating (hub/registry); the
// controller here removes the content and then releases it through the
// namespaces/finalize subresource, the only path that changes
// spec.finalizers, so a client cannot skip the content deletion by an
// update. Earlier hubs used the metadata finalizer ContentFinalizer;
// namespaces that still carry it are migrated and finalized alike.
//
// Creating content in a missing namespace answers 404 NotFound for the
// namespace, in a terminating one 403 with the NamespaceTerminating cause,
// both with upstream's messages.
//
// default and kube-system are immortal: admission refuses their deletion
// whatever the options (dry run, preconditions, propagation policy, grace
// period) and whether or not they still carry the content finalizer, and
// takes the name from the stored object, so that a collection delete, whose
// request names nothing, is covered too. The Namespace storage serves no
// deletecollection at all (hub/registry), as kube-apiserver.
package namespaces
