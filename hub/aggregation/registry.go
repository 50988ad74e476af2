package aggregation

import (
	"context"
	"fmt"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/wharfhub/wharf/hub/registry"
)

// Resource is the APIService resource.
var Resource = apiregv1.SchemeGroupVersion.WithResource("apiservices")

// Storage is the APIService storage of every workspace: the resource and
// its status subresource.
type Storage struct {
	APIServices *registry.Store
	Status      *StatusREST
}

// Map is the storage as genericapiserver.APIGroupInfo expects it.
func (s *Storage) Map() map[string]rest.Storage {
	return map[string]rest.Storage{"apiservices": s.APIServices, "apiservices/status": s.Status}
}

// NewStorage builds the APIService storage through the hub's storage
// decorator (optsGetter), so objects are stored per workspace like every
// other built-in kind. groupOwned reports the groups a catalog entry owns,
// which no APIService may claim.
func NewStorage(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter, groupOwned func(string) bool) (*Storage, error) {
	k := &registry.Kind{
		Resource: Resource.GroupResource(), Singular: "apiservice",
		New:     func() runtime.Object { return &apiregv1.APIService{} },
		NewList: func() runtime.Object { return &apiregv1.APIServiceList{} },
		// Validation is upstream's (validation.go); the name rule is
		// part of it (<version>.<group>).
		NameValidation: func(string, bool) []string { return nil },
		Table:          table,
		// As upstream's strategy: status is the hub's, never set by a
		// create or a main-resource update.
		PrepareForCreate: func(obj runtime.Object) { obj.(*apiregv1.APIService).Status = apiregv1.APIServiceStatus{} },
		PrepareForUpdate: func(obj, old runtime.Object) {
			obj.(*apiregv1.APIService).Status = old.(*apiregv1.APIService).Status
		},
		Validate: func(obj runtime.Object) field.ErrorList { return validate(obj.(*apiregv1.APIService), groupOwned) },
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validateUpdate(obj.(*apiregv1.APIService), old.(*apiregv1.APIService))
		},
	}
	main, err := registry.NewStore(typer, optsGetter, k)
	if err != nil {
		return nil, err
	}
	status := *main.Store
	status.CreateStrategy = nil
	status.DeleteStrategy = nil
	status.UpdateStrategy = statusStrategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator}
	return &Storage{APIServices: main, Status: &StatusREST{store: &status}}, nil
}

// StatusREST is apiservices/status: get, update and patch of the status.
type StatusREST struct{ store *genericregistry.Store }

var (
	_ rest.Getter  = &StatusREST{}
	_ rest.Updater = &StatusREST{}
	_ rest.Patcher = &StatusREST{}
)

// New implements rest.Storage.
func (r *StatusREST) New() runtime.Object { return &apiregv1.APIService{} }

// Destroy implements rest.Storage; the main store owns the backend.
func (r *StatusREST) Destroy() {}

// Get implements rest.Getter.
func (r *StatusREST) Get(ctx context.Context, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, opts)
}

// Update implements rest.Updater; a status never creates its object.
func (r *StatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

// statusStrategy keeps everything but status from the stored object, as
// upstream's: labels, annotations, finalizers and owners too, so a status
// write can never change routing or the protection label.
type statusStrategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	registry.Defaults
}

func (statusStrategy) NamespaceScoped() bool { return false }

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, o := obj.(*apiregv1.APIService), old.(*apiregv1.APIService)
	n.Spec = o.Spec
	n.Labels, n.Annotations = o.Labels, o.Annotations
	n.Finalizers, n.OwnerReferences = o.Finalizers, o.OwnerReferences
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	n, o := obj.(*apiregv1.APIService), old.(*apiregv1.APIService)
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&n.ObjectMeta, &o.ObjectMeta, field.NewPath("metadata"))
	return append(errs, validateStatusUpdate(n, o)...)
}

// GroupVersionOf is the group version an APIService serves.
func GroupVersionOf(s *apiregv1.APIService) schema.GroupVersion {
	return schema.GroupVersion{Group: s.Spec.Group, Version: s.Spec.Version}
}

// errUnexpected is for objects of the wrong type in this package's stores.
func errUnexpected(obj any) error { return fmt.Errorf("unexpected object %T", obj) }
