package registry

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// StatusREST serves a status subresource (namespaces/status,
// resourcequotas/status): get, update and patch through a copy of the main
// store whose update strategy changes status only. RBAC sees it as the
// subresource status of the main resource.
type StatusREST struct {
	store *genericregistry.Store
}

var (
	_ rest.Getter              = &StatusREST{}
	_ rest.Updater             = &StatusREST{}
	_ rest.ResetFieldsStrategy = &StatusREST{}
)

// statusStrategy is a status-only update strategy that also names the
// fields server-side apply must leave to the main resource.
type statusStrategy interface {
	rest.RESTUpdateStrategy
	rest.ResetFieldsStrategy
}

// newStatusREST derives a status subresource from the completed main
// store: same storage, s for updates and reset fields.
func newStatusREST(main *genericregistry.Store, s statusStrategy) *StatusREST {
	status := *main
	status.UpdateStrategy = s
	status.ResetFieldsStrategy = s
	return &StatusREST{store: &status}
}

// New implements rest.Storage.
func (r *StatusREST) New() runtime.Object { return r.store.New() }

// Destroy implements rest.Storage; the main store owns the storage.
func (r *StatusREST) Destroy() {}

// Get implements rest.Getter.
func (r *StatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Update implements rest.Updater. As upstream, a status write never
// creates the object.
func (r *StatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

// GetResetFields implements rest.ResetFieldsStrategy.
func (r *StatusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}
