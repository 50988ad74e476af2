package workspaces

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"

	tenancyv1alpha1 "github.com/wharfhub/wharf/hub/apis/tenancy/v1alpha1"
	"github.com/wharfhub/wharf/hub/cluster"
)

// REST is the Workspace storage. Every way of creating a Workspace (create,
// server-side apply, dry-run of either) goes through Create, which
// allocates the logical cluster before the object is stored; deletion is
// finished by the Controller.
type REST struct {
	*genericregistry.Store
	// hub writes what only the hub may change (status, the cleanup
	// finalizer). It is not part of any storage map, so no request can
	// reach it.
	hub         *genericregistry.Store
	index       *Index
	externalURL string
	initialize  Initializer
}

// Initializer fills a new workspace's logical cluster with what every
// workspace starts with (namespaces, bootstrap RBAC). creator is the user
// who asked for the workspace.
type Initializer func(ctx context.Context, id cluster.ID, creator user.Info) error

// StatusREST serves workspaces/status read-only. Status is the hub's
// record of which logical cluster a Workspace is, so no client may write
// it, hub administrators included: PUT and PATCH answer 405
// MethodNotAllowed, and discovery lists only "get".
type StatusREST struct {
	store *genericregistry.Store
}

var (
	_ rest.StandardStorage    = &REST{}
	_ rest.ShortNamesProvider = &REST{}
	_ rest.Getter             = &StatusREST{}
)

// NewREST builds Workspace storage; initialize runs for each new workspace.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter, index *Index, externalURL string, initialize Initializer) (*REST, *StatusREST, error) {
	st := strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator}
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &tenancyv1alpha1.Workspace{} },
		NewListFunc:               func() runtime.Object { return &tenancyv1alpha1.WorkspaceList{} },
		DefaultQualifiedResource:  tenancyv1alpha1.Resource("workspaces"),
		SingularQualifiedResource: tenancyv1alpha1.Resource("workspace"),
		CreateStrategy:            st,
		UpdateStrategy:            st,
		DeleteStrategy:            st,
		ResetFieldsStrategy:       st,
		BeginCreate:               beginCreate,
		TableConvertor:            table,
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter}); err != nil {
		return nil, nil, fmt.Errorf("completing workspace storage: %w", err)
	}
	hub := *store
	hub.UpdateStrategy = hubStrategy{st}
	return &REST{Store: store, hub: &hub, index: index, externalURL: strings.TrimSuffix(externalURL, "/"), initialize: initialize},
		&StatusREST{store: store}, nil
}

// beginCreate refuses to store a Workspace that REST.Create did not
// allocate. It is the backstop for any create path the upstream store may
// offer (create on update, say): such a Workspace would squat its name with
// no cluster, finalizer or creator binding.
func beginCreate(ctx context.Context, _ runtime.Object, _ *metav1.CreateOptions) (genericregistry.FinishFunc, error) {
	if _, ok := initialStatus(ctx); !ok {
		return nil, apierrors.NewInternalError(errors.New("workspace create bypassed allocation"))
	}
	return func(context.Context, bool) {}, nil
}

// ShortNames implements rest.ShortNamesProvider.
func (r *REST) ShortNames() []string { return []string{"ws"} }

// hubUpdate changes a Workspace as the hub, through the store no request
// reaches. mutate edits the current object; conflicts are retried by the
// store with a fresh copy.
func (r *REST) hubUpdate(ctx context.Context, name string, mutate func(*tenancyv1alpha1.Workspace)) error {
	_, err := r.hubUpdateObject(ctx, name, mutate)
	return err
}

// hubUpdateObject is hubUpdate returning the stored result.
func (r *REST) hubUpdateObject(ctx context.Context, name string, mutate func(*tenancyv1alpha1.Workspace)) (runtime.Object, error) {
	out, _, err := r.hub.Update(ctx, name, rest.DefaultUpdatedObjectInfo(nil, func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
		w := old.(*tenancyv1alpha1.Workspace).DeepCopy()
		mutate(w)
		return w, nil
	}), nil, nil, false, &metav1.UpdateOptions{})
	return out, err
}

// New implements rest.Storage.
func (r *StatusREST) New() runtime.Object { return &tenancyv1alpha1.Workspace{} }

// Destroy implements rest.Storage; the main store owns the backend.
func (r *StatusREST) Destroy() {}

// Get implements rest.Getter.
func (r *StatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}
