package registry

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// NamespaceStorage serves Namespaces as kube-apiserver does: every verb but
// deletecollection. Upstream's namespace REST does not implement
// rest.CollectionDeleter, so DELETE /api/v1/namespaces is not routed (405
// MethodNotAllowed from the API server's own router) and discovery does not
// list the verb. The generic store would delete every namespace of a
// workspace, default and kube-system included, in one request.
//
// The methods forward explicitly instead of embedding the store, so that a
// method added to the store later is not served by accident.
type NamespaceStorage struct {
	store    *Store
	status   *StatusREST
	finalize *NamespaceFinalizeREST
}

var (
	_ rest.Storage                    = &NamespaceStorage{}
	_ rest.StorageWithReadiness       = &NamespaceStorage{}
	_ rest.Scoper                     = &NamespaceStorage{}
	_ rest.Creater                    = &NamespaceStorage{}
	_ rest.Updater                    = &NamespaceStorage{}
	_ rest.Getter                     = &NamespaceStorage{}
	_ rest.Lister                     = &NamespaceStorage{}
	_ rest.Watcher                    = &NamespaceStorage{}
	_ rest.GracefulDeleter            = &NamespaceStorage{}
	_ rest.MayReturnFullObjectDeleter = &NamespaceStorage{}
	_ rest.ShortNamesProvider         = &NamespaceStorage{}
	_ rest.SingularNameProvider       = &NamespaceStorage{}
	_ rest.StorageVersionProvider     = &NamespaceStorage{}
	_ rest.ResetFieldsStrategy        = &NamespaceStorage{}
	_ rest.TableConvertor             = &NamespaceStorage{}
)

// NewNamespaceStorage wraps the generic store of namespaces, and derives
// the status and finalize subresources from it. An update that leaves a
// namespace being deleted without any finalizer, metadata or spec, deletes
// it (as upstream's store does).
func NewNamespaceStorage(s *Store) *NamespaceStorage {
	s.Store.ShouldDeleteDuringUpdate = func(_ context.Context, _ string, obj, _ runtime.Object) bool {
		ns, ok := obj.(*corev1.Namespace)
		return ok && len(ns.Spec.Finalizers) == 0 && !hasLegacy(ns)
	}
	s.Store.ResetFieldsStrategy = namespaceResetFields{}
	status, finalize := newNamespaceSubresources(s.Store)
	return &NamespaceStorage{store: s, status: status, finalize: finalize}
}

// Status returns the namespaces/status storage.
func (n *NamespaceStorage) Status() *StatusREST { return n.status }

// Finalize returns the namespaces/finalize storage.
func (n *NamespaceStorage) Finalize() *NamespaceFinalizeREST { return n.finalize }

// Store returns the full generic store, for the hub's own controllers (the
// namespace controller, lifecycle admission, workspace initialization).
func (n *NamespaceStorage) Store() *Store { return n.store }

// New implements rest.Storage.
func (n *NamespaceStorage) New() runtime.Object { return n.store.New() }

// Destroy implements rest.Storage.
func (n *NamespaceStorage) Destroy() { n.store.Destroy() }

// ReadinessCheck implements rest.StorageWithReadiness.
func (n *NamespaceStorage) ReadinessCheck() error { return n.store.ReadinessCheck() }

// NamespaceScoped implements rest.Scoper.
func (n *NamespaceStorage) NamespaceScoped() bool { return false }

// GetSingularName implements rest.SingularNameProvider.
func (n *NamespaceStorage) GetSingularName() string { return n.store.GetSingularName() }

// ShortNames implements rest.ShortNamesProvider.
func (n *NamespaceStorage) ShortNames() []string { return n.store.ShortNames() }

// NewList implements rest.Lister.
func (n *NamespaceStorage) NewList() runtime.Object { return n.store.NewList() }

// List implements rest.Lister.
func (n *NamespaceStorage) List(ctx context.Context, options *metainternalversion.ListOptions) (runtime.Object, error) {
	return n.store.List(ctx, options)
}

// ConvertToTable implements rest.TableConvertor.
func (n *NamespaceStorage) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return n.store.ConvertToTable(ctx, object, tableOptions)
}

// Get implements rest.Getter.
func (n *NamespaceStorage) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return n.store.Get(ctx, name, options)
}

// Watch implements rest.Watcher.
func (n *NamespaceStorage) Watch(ctx context.Context, options *metainternalversion.ListOptions) (watch.Interface, error) {
	return n.store.Watch(ctx, options)
}

// Create implements rest.Creater.
func (n *NamespaceStorage) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	return n.store.Create(ctx, obj, createValidation, options)
}

// Update implements rest.Updater.
func (n *NamespaceStorage) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return n.store.Update(ctx, name, objInfo, createValidation, updateValidation, forceAllowCreate, options)
}

// DeleteReturnsDeletedObject implements rest.MayReturnFullObjectDeleter.
func (n *NamespaceStorage) DeleteReturnsDeletedObject() bool {
	return n.store.DeleteReturnsDeletedObject()
}

// StorageVersion implements rest.StorageVersionProvider.
func (n *NamespaceStorage) StorageVersion() runtime.GroupVersioner { return n.store.StorageVersion() }

// GetResetFields implements rest.ResetFieldsStrategy.
func (n *NamespaceStorage) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return n.store.GetResetFields()
}
