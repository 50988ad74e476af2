package workspaces

import (
	"context"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	tenancyv1alpha1 "github.com/wharfhub/wharf/hub/apis/tenancy/v1alpha1"
	"github.com/wharfhub/wharf/hub/registry"
)

// strategy governs the main Workspace resource. Status is owned by the hub:
// it is set at creation and by the deletion controller through the status
// subresource, never by clients.
type strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	registry.Defaults
}

type statusStrategy struct{ strategy }

var (
	_ rest.RESTCreateStrategy  = strategy{}
	_ rest.RESTUpdateStrategy  = strategy{}
	_ rest.ResetFieldsStrategy = strategy{}
	_ rest.RESTUpdateStrategy  = statusStrategy{}
)

func (strategy) NamespaceScoped() bool { return false }

type initialStatusKey struct{}

// withInitialStatus carries the status REST.Create computed (after
// allocating the logical cluster) to PrepareForCreate.
func withInitialStatus(ctx context.Context, st tenancyv1alpha1.WorkspaceStatus) context.Context {
	return context.WithValue(ctx, initialStatusKey{}, st)
}

func (strategy) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	st, _ := ctx.Value(initialStatusKey{}).(tenancyv1alpha1.WorkspaceStatus)
	obj.(*tenancyv1alpha1.Workspace).Status = st
}

func (strategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	obj.(*tenancyv1alpha1.Workspace).Status = old.(*tenancyv1alpha1.Workspace).Status
}

// ValidateName checks a workspace name: a DNS label, because it becomes a
// path segment.
func ValidateName(name string, prefix bool) []string {
	if prefix && len(name) > 1 && name[len(name)-1] == '-' {
		// generateName prefixes end in a dash that the suffix will follow.
		name = name[:len(name)-1] + "a"
	}
	return validation.IsDNS1123Label(name)
}

func (strategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	ws := obj.(*tenancyv1alpha1.Workspace)
	return apimachineryvalidation.ValidateObjectMeta(&ws.ObjectMeta, false, ValidateName, field.NewPath("metadata"))
}

func (s strategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	ws, o := obj.(*tenancyv1alpha1.Workspace), old.(*tenancyv1alpha1.Workspace)
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&ws.ObjectMeta, &o.ObjectMeta, field.NewPath("metadata"))
	return append(errs, s.Validate(ctx, obj)...)
}

// GetResetFields tells server-side apply that clients do not own status.
func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		"tenancy.wharf.dev/v1alpha1": fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
	}
}

func (statusStrategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	ws, o := obj.(*tenancyv1alpha1.Workspace), old.(*tenancyv1alpha1.Workspace)
	ws.Spec = o.Spec
	ws.ObjectMeta = *o.ObjectMeta.DeepCopy()
	ws.ResourceVersion = obj.(*tenancyv1alpha1.Workspace).ResourceVersion
}

func (statusStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return nil
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		"tenancy.wharf.dev/v1alpha1": fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata")),
	}
}
