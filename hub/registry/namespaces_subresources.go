package registry

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

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
// completed main store: same storage, other update strategies (status:
// namespaceStatusStrategy, as upstream changing only status).
func newNamespaceSubresources(main *genericregistry.Store) (*StatusREST, *NamespaceFinalizeREST) {
	st := main.UpdateStrategy.(strategy)
	finalize := *main
	finalize.UpdateStrategy = namespaceFinalizeStrategy{st}
	finalize.ResetFieldsStrategy = namespaceFinalizeStrategy{st}
	return newStatusREST(main, namespaceStatusStrategy{st}), &NamespaceFinalizeREST{store: &finalize}
}
