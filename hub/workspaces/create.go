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
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/klog/v2"

	tenancyv1alpha1 "github.com/wharfhub/wharf/hub/apis/tenancy/v1alpha1"
	"github.com/wharfhub/wharf/hub/cluster"
)

// Create allocates a logical cluster for the new workspace, stores the
// Workspace in its parent, and initializes the cluster (namespaces, the
// creator's admin binding). A dry run does none of the allocation or
// initialization: it only validates and admits.
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
	// The workspace is stored Initializing (Ready False) and becomes Ready
	// once initialize has run, as kcp's Workspace goes Initializing, Ready.
	initial := tenancyv1alpha1.WorkspaceStatus{
		Phase: tenancyv1alpha1.WorkspacePhaseInitializing, Cluster: string(id), Path: string(path),
		URL: r.externalURL + "/clusters/" + string(path),
		Conditions: []metav1.Condition{{
			Type: tenancyv1alpha1.WorkspaceReady, Status: metav1.ConditionFalse, Reason: tenancyv1alpha1.WorkspaceReasonInitializing,
			Message: "The workspace is being initialized.", LastTransitionTime: metav1.Now(),
		}},
	}
	ctx = withInitialStatus(ctx, initial)
	out, err := r.Store.Create(ctx, ws, createValidation, options)
	if err != nil {
		if !dryRun {
			if rerr := r.index.Release(context.WithoutCancel(ctx), id, path); rerr != nil {
				klog.FromContext(ctx).Error(rerr, "Releasing workspace after failed create", "path", path)
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
		klog.FromContext(ctx).Error(err, "Initializing workspace", "workspace", path)
		return nil, apierrors.NewInternalError(fmt.Errorf("workspace %s created but not initialized: %w", path, err))
	}
	ready, err := r.hubUpdateObject(context.WithoutCancel(ctx), ws.Name, func(w *tenancyv1alpha1.Workspace) { markReady(w) })
	if err != nil {
		klog.FromContext(ctx).Error(err, "Marking workspace Ready", "workspace", path)
		return nil, apierrors.NewInternalError(fmt.Errorf("workspace %s initialized but not marked Ready: %w", path, err))
	}
	return ready, nil
}

// Update changes an existing Workspace. When the caller may create on
// update (server-side apply) and the Workspace does not exist, the applied
// object is created through Create, as `kubectl apply --server-side` of a
// new object creates on kube-apiserver: with its cluster, finalizer and
// creator binding. The upstream store's own create-on-update would store
// it without any of them, so it is never asked to.
func (r *REST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	if forceAllowCreate {
		_, err := r.Store.Get(ctx, name, &metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return r.createOnUpdate(ctx, name, objInfo, createValidation, options)
		}
		if err != nil {
			return nil, false, err
		}
	}
	// A Workspace deleted since the Get answers 404, as an update of a
	// vanished object does; the client's retry then creates.
	return r.Store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

func (r *REST) createOnUpdate(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	// An empty object stands for "not found", as the upstream store hands
	// to the patcher; admission then sees a Create.
	obj, err := objInfo.UpdatedObject(ctx, r.New())
	if err != nil {
		return nil, false, err
	}
	ws, ok := obj.(*tenancyv1alpha1.Workspace)
	if !ok {
		return nil, false, apierrors.NewBadRequest(fmt.Sprintf("not a Workspace: %T", obj))
	}
	if ws.Name != name {
		return nil, false, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", ws.Name, name))
	}
	// As the upstream store does for create on update: system fields are
	// the server's, and a resourceVersion cannot be kept by a new object.
	rest.WipeObjectMetaSystemFields(ws)
	ws.ResourceVersion = ""
	out, err := r.Create(ctx, ws, createValidation, &metav1.CreateOptions{
		DryRun: options.DryRun, FieldManager: options.FieldManager, FieldValidation: options.FieldValidation,
	})
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}
