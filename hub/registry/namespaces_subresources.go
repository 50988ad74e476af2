package registry

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// NamespaceStatusREST serves namespaces/status: get, update and patch,
// changing only status (namespaceStatusStrategy). RBAC sees it as the
// subresource status of namespaces.
type NamespaceStatusREST struct {
	store *genericregistry.Store
}

var (
	_ rest.Getter              = &NamespaceStatusREST{}
	_ rest.Updater             = &NamespaceStatusREST{}
	_ rest.ResetFieldsStrategy = &NamespaceStatusREST{}
)

// New implements rest.Storage.
func (r *NamespaceStatusREST) New() runtime.Object { return r.store.New() }

// Destroy implements rest.Storage; the main store owns the storage.
func (r *NamespaceStatusREST) Destroy() {}

// Get implements rest.Getter.
func (r *NamespaceStatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Update implements rest.Updater. As upstream, a status write never
// creates a namespace.
func (r *NamespaceStatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

// GetResetFields implements rest.ResetFieldsStrategy.
func (r *NamespaceStatusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

// NamespaceFinalizeREST serves namespaces/finalize: update only (as
// upstream: PUT, no get and no patch), changing only spec.finalizers
// (namespaceFinalizeStrategy). Removing the last finalizer of a namespace
// that is being deleted deletes it.
type NamespaceFinalizeREST struct {
	store *genericregistry.Store
}

var (
	_ rest.Updater             = &NamespaceFinalizeREST{}
	_ rest.ResetFieldsStrategy = &NamespaceFinalizeREST{}
)

// New implements rest.Storage.
func (r *NamespaceFinalizeREST) New() runtime.Object { return r.store.New() }

// Destroy implements rest.Storage; the main store owns the storage.
func (r *NamespaceFinalizeREST) Destroy() {}

// Update implements rest.Updater.
func (r *NamespaceFinalizeREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

// GetResetFields implements rest.ResetFieldsStrategy.
func (r *NamespaceFinalizeREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

// newNamespaceSubresources derives the status and finalize stores from the
// completed main store: same storage, other update strategies.
func newNamespaceSubresources(main *genericregistry.Store) (*NamespaceStatusREST, *NamespaceFinalizeREST) {
	st := main.UpdateStrategy.(strategy)
	status := *main
	status.UpdateStrategy = namespaceStatusStrategy{st}
	status.ResetFieldsStrategy = namespaceStatusStrategy{st}
	finalize := *main
	finalize.UpdateStrategy = namespaceFinalizeStrategy{st}
	finalize.ResetFieldsStrategy = namespaceFinalizeStrategy{st}
	return &NamespaceStatusREST{store: &status}, &NamespaceFinalizeREST{store: &finalize}
}
