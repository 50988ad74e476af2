package workspaces

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/klog/v2"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	tenancyv1alpha1 "github.com/wharfhub/wharf/hub/apis/tenancy/v1alpha1"
	"github.com/wharfhub/wharf/hub/cluster"
)

// REST is the Workspace storage. Create allocates the logical cluster before
// the object is stored; deletion is finished by the Controller.
type REST struct {
	*genericregistry.Store
	index       *Index
	externalURL string
	initialize  Initializer
}

// Initializer fills a new workspace's logical cluster with what every
// workspace starts with (namespaces, bootstrap RBAC). creator is the user
// who asked for the workspace.
type Initializer func(ctx context.Context, id cluster.ID, creator user.Info) error

// StatusREST serves workspaces/status for the hub's own controllers.
type StatusREST struct {
	store *genericregistry.Store
}

var (
	_ rest.StandardStorage    = &REST{}
	_ rest.ShortNamesProvider = &REST{}
	_ rest.Patcher            = &StatusREST{}
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
		TableConvertor:            table,
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter}); err != nil {
		return nil, nil, fmt.Errorf("completing workspace storage: %w", err)
	}
	statusStore := *store
	statusStore.UpdateStrategy = statusStrategy{st}
	statusStore.ResetFieldsStrategy = statusStrategy{st}
	return &REST{Store: store, index: index, externalURL: strings.TrimSuffix(externalURL, "/"), initialize: initialize},
		&StatusREST{store: &statusStore}, nil
}

// ShortNames implements rest.ShortNamesProvider.
func (r *REST) ShortNames() []string { return []string{"ws"} }

// Create allocates a logical cluster for the new workspace, stores the
// Workspace in its parent, and creates the default namespace inside it.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	ws, ok := obj.(*tenancyv1alpha1.Workspace)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a Workspace: %T", obj))
	}
	parent, ok := cluster.From(ctx)
	if !ok {
		return nil, apierrors.NewInternalError(errors.New("workspace create without a parent cluster"))
	}
	if ws.Name == "" && ws.GenerateName != "" {
		ws.Name = names.SimpleNameGenerator.GenerateName(ws.GenerateName)
	}
	if msgs := ValidateName(ws.Name, false); len(msgs) > 0 {
		return nil, apierrors.NewInvalid(tenancyv1alpha1.SchemeGroupVersion.WithKind("Workspace").GroupKind(), ws.Name,
			field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), ws.Name, strings.Join(msgs, "; "))})
	}
	parentPath, err := r.index.PathOf(ctx, parent)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("resolving parent workspace: %w", err))
	}
	path := parentPath.Join(ws.Name)
	dryRun := len(options.DryRun) > 0

	id := cluster.ID("")
	if !dryRun {
		id, err = r.index.Allocate(ctx, path)
		if errors.Is(err, ErrExists) {
			return nil, apierrors.NewAlreadyExists(tenancyv1alpha1.Resource("workspaces"), ws.Name)
		}
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
	}
	ws.Finalizers = appendOnce(ws.Finalizers, tenancyv1alpha1.WorkspaceCleanupFinalizer)
	// The strategy replaces whatever status the client sent with this one.
	ctx = withInitialStatus(ctx, tenancyv1alpha1.WorkspaceStatus{
		Phase: tenancyv1alpha1.WorkspacePhaseReady, Cluster: string(id), Path: string(path),
		URL: r.externalURL + "/clusters/" + string(path),
	})
	out, err := r.Store.Create(ctx, ws, createValidation, options)
	if err != nil {
		if !dryRun {
			if rerr := r.index.Release(context.WithoutCancel(ctx), id, path); rerr != nil {
				klog.ErrorS(rerr, "Releasing workspace after failed create", "path", path)
			}
		}
		return nil, err
	}
	if dryRun {
		return out, nil
	}
	creator, _ := request.UserFrom(ctx)
	if err := r.initialize(context.WithoutCancel(ctx), id, creator); err != nil {
		// The workspace exists; report the failure rather than hide it.
		// Initialization is idempotent, so the client may simply retry
		// by deleting and recreating.
		klog.ErrorS(err, "Initializing workspace", "workspace", path)
		return nil, apierrors.NewInternalError(fmt.Errorf("workspace %s created but not initialized: %w", path, err))
	}
	return out, nil
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// New implements rest.Storage.
func (r *StatusREST) New() runtime.Object { return &tenancyv1alpha1.Workspace{} }

// Destroy implements rest.Storage; the main store owns the backend.
func (r *StatusREST) Destroy() {}

// Get implements rest.Getter.
func (r *StatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Update implements rest.Updater, changing status only.
func (r *StatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

// GetResetFields implements rest.ResetFieldsStrategy.
func (r *StatusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}
