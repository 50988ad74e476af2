package catalog

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	providersv1alpha1 "github.com/wharfhub/wharf/hub/apis/providers/v1alpha1"
	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/registry"
)

// Storage is the REST storage of providers.wharf.dev, by resource name.
type Storage struct {
	Entries        *EntryREST
	EntriesStatus  *StatusREST
	Bindings       *BindingREST
	BindingsStatus *StatusREST
	// BindingsCleanup is the one writer that may drop a binding's
	// cleanup finalizer: the enablement controller, once it disabled the
	// provider. It is never served.
	BindingsCleanup *genericregistry.Store
}

// Map returns the storage map to install. The status subresources are
// not in it: status is the hub's record of what it observed (replica
// heartbeats, readiness, whether a binding is bound), so only the hub's
// own controllers write it, in-process through EntriesStatus and
// BindingsStatus. Serving them would let any workspace admin forge
// Ready/Bound, and a root admin forge a provider's health.
func (s *Storage) Map() map[string]rest.Storage {
	return map[string]rest.Storage{"catalogentries": s.Entries, "providerbindings": s.Bindings}
}

// EntryREST stores CatalogEntries, in the root workspace only (see
// admit.go: the rule is a store hook, so it holds on every write path).
type EntryREST struct {
	*genericregistry.Store
	root cluster.ID
}

// BindingREST stores ProviderBindings; a binding must name a provider that
// is in the catalog (a store hook too).
type BindingREST struct {
	*genericregistry.Store
}

// StatusREST serves the status subresource, for the hub's controllers.
type StatusREST struct {
	store *genericregistry.Store
	newFn func() runtime.Object
}

var (
	_ rest.StandardStorage    = &EntryREST{}
	_ rest.StandardStorage    = &BindingREST{}
	_ rest.ShortNamesProvider = &EntryREST{}
	_ rest.Patcher            = &StatusREST{}
)

// NewStorage builds the storage of both kinds. root is the root
// workspace's logical cluster, the only home of CatalogEntries.
func NewStorage(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter, root cluster.ID) (*Storage, error) {
	entries, entriesStatus, _, err := newStore(typer, optsGetter, "catalogentry", catalogOps, entryTable, rootOnly(root),
		func() runtime.Object { return &providersv1alpha1.CatalogEntry{} },
		func() runtime.Object { return &providersv1alpha1.CatalogEntryList{} })
	if err != nil {
		return nil, err
	}
	e := &EntryREST{Store: entries, root: root}
	bindings, bindingsStatus, bindingsCleanup, err := newStore(typer, optsGetter, "providerbinding", bindingOps, bindingTable, hooks{create: providerExists(e)},
		func() runtime.Object { return &providersv1alpha1.ProviderBinding{} },
		func() runtime.Object { return &providersv1alpha1.ProviderBindingList{} })
	if err != nil {
		return nil, err
	}
	return &Storage{
		Entries:         e,
		EntriesStatus:   &StatusREST{store: entriesStatus, newFn: entries.NewFunc},
		Bindings:        &BindingREST{Store: bindings},
		BindingsStatus:  &StatusREST{store: bindingsStatus, newFn: bindings.NewFunc},
		BindingsCleanup: bindingsCleanup,
	}, nil
}

func newStore(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter, singular string, ops kindOps, table registry.Table, h hooks,
	newFn, newList func() runtime.Object) (main, status, cleanup *genericregistry.Store, err error) {
	st := strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator, ops: ops}
	s := &genericregistry.Store{
		NewFunc:                   newFn,
		NewListFunc:               newList,
		DefaultQualifiedResource:  providersv1alpha1.Resource(singular + "s"),
		SingularQualifiedResource: providersv1alpha1.Resource(singular),
		CreateStrategy:            st,
		UpdateStrategy:            st,
		DeleteStrategy:            st,
		ResetFieldsStrategy:       st,
		TableConvertor:            table,
		BeginCreate:               h.create,
		BeginUpdate:               h.update,
	}
	if singular == "catalogentry" {
		s.DefaultQualifiedResource = providersv1alpha1.Resource("catalogentries")
	}
	if err := s.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter}); err != nil {
		return nil, nil, nil, fmt.Errorf("completing %s storage: %w", singular, err)
	}
	// The copies share the backend and differ in how updates treat the
	// object: status only, or with the hub's right to finish cleanup.
	derive := func(set func(*strategy)) *genericregistry.Store {
		cp, cst := *s, st
		set(&cst)
		cp.UpdateStrategy, cp.ResetFieldsStrategy = cst, cst
		return &cp
	}
	return s, derive(func(c *strategy) { c.status = true }), derive(func(c *strategy) { c.cleanup = true }), nil
}

// ShortNames implements rest.ShortNamesProvider.
func (r *EntryREST) ShortNames() []string { return []string{"ce"} }

// Root returns the logical cluster CatalogEntries live in.
func (r *EntryREST) Root() cluster.ID { return r.root }

// New implements rest.Storage.
func (r *StatusREST) New() runtime.Object { return r.newFn() }

// Destroy implements rest.Storage; the main store owns the backend.
func (r *StatusREST) Destroy() {}

// Get implements rest.Getter.
func (r *StatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Update implements rest.Updater, changing status only.
func (r *StatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

// GetResetFields implements rest.ResetFieldsStrategy.
func (r *StatusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}
