package registry

import (
	"fmt"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
)

// Kind describes one built-in resource: its identity and the type-specific
// parts of its strategy.
type Kind struct {
	Resource   schema.GroupResource
	Singular   string
	Namespaced bool
	ShortNames []string
	New        func() runtime.Object
	NewList    func() runtime.Object

	// NameValidation defaults to DNS subdomain names.
	NameValidation   apimachineryvalidation.ValidateNameFunc
	PrepareForCreate func(obj runtime.Object)
	PrepareForUpdate func(obj, old runtime.Object)
	Validate         func(obj runtime.Object) field.ErrorList
	ValidateUpdate   func(obj, old runtime.Object) field.ErrorList
	// Table renders kubectl get; nil means upstream's default (name and
	// creation time).
	Table rest.TableConvertor
}

func (k *Kind) nameValidation() apimachineryvalidation.ValidateNameFunc {
	if k.NameValidation != nil {
		return k.NameValidation
	}
	return apimachineryvalidation.NameIsDNSSubdomain
}

// Store is a genericregistry.Store that also reports short names, which
// discovery publishes and kubectl resolves (kubectl get cm).
type Store struct {
	*genericregistry.Store
	shortNames []string
}

var (
	_ rest.ShortNamesProvider = &Store{}
	_ rest.StandardStorage    = &Store{}
)

// ShortNames implements rest.ShortNamesProvider.
func (s *Store) ShortNames() []string { return s.shortNames }

// NewStore builds the REST storage of a Kind.
func NewStore(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter, k *Kind) (*Store, error) {
	st := strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator, kind: k}
	s := &genericregistry.Store{
		NewFunc:                   k.New,
		NewListFunc:               k.NewList,
		DefaultQualifiedResource:  k.Resource,
		SingularQualifiedResource: schema.GroupResource{Group: k.Resource.Group, Resource: k.Singular},
		CreateStrategy:            st,
		UpdateStrategy:            st,
		DeleteStrategy:            st,
		TableConvertor:            k.Table,
	}
	if s.TableConvertor == nil {
		s.TableConvertor = rest.NewDefaultTableConvertor(k.Resource)
	}
	if err := s.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter}); err != nil {
		return nil, fmt.Errorf("completing storage for %s: %w", k.Resource, err)
	}
	return &Store{Store: s, shortNames: k.ShortNames}, nil
}
