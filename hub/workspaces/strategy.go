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

// strategy governs every client write of the main Workspace resource. Status
// and the cleanup finalizer are the hub's: status is set once at creation
// (REST.Create) and afterwards only through hubStrategy, which no HTTP
// route reaches. A client's change to either is dropped, as kube-apiserver
// drops status changes sent to a main resource.
type strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	registry.Defaults
}

// hubStrategy governs the hub's own updates (the deletion controller's
// Terminating phase and finalizer removal). It is installed only on a store
// copy held inside this package, never in the API's storage map, so no
// identity, however privileged, can make a request that uses it.
type hubStrategy struct{ strategy }

var (
	_ rest.RESTCreateStrategy  = strategy{}
	_ rest.RESTUpdateStrategy  = strategy{}
	_ rest.ResetFieldsStrategy = strategy{}
	_ rest.RESTUpdateStrategy  = hubStrategy{}
)

func (strategy) NamespaceScoped() bool { return false }

type initialStatusKey struct{}

// withInitialStatus carries the status REST.Create computed (after
// allocating the logical cluster) to PrepareForCreate. Its presence is also
// what beginCreate checks: a create that did not pass through REST.Create
// has not been allocated and must not be stored.
func withInitialStatus(ctx context.Context, st tenancyv1alpha1.WorkspaceStatus) context.Context {
	return context.WithValue(ctx, initialStatusKey{}, st)
}

func initialStatus(ctx context.Context) (tenancyv1alpha1.WorkspaceStatus, bool) {
	st, ok := ctx.Value(initialStatusKey{}).(tenancyv1alpha1.WorkspaceStatus)
	return st, ok
}

func (strategy) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	st, _ := initialStatus(ctx)
	obj.(*tenancyv1alpha1.Workspace).Status = st
}

func (strategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	ws, o := obj.(*tenancyv1alpha1.Workspace), old.(*tenancyv1alpha1.Workspace)
	ws.Status = o.Status
	// Without the finalizer the object would go before its cluster is
	// purged; only the controller, through hubStrategy, may drop it.
	if hasFinalizer(o, tenancyv1alpha1.WorkspaceCleanupFinalizer) {
		ws.Finalizers = appendOnce(ws.Finalizers, tenancyv1alpha1.WorkspaceCleanupFinalizer)
	}
}

// PrepareForUpdate lets the hub's change through as the controller made it.
func (hubStrategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {}

// ValidateName checks a workspace name: a DNS label, because it becomes a
// path segment. That also keeps ':' (the path separator), '/', '*' and
// upper case out, so a name can never make a path that parses differently
// or reads as the wildcard.
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

func hasFinalizer(ws *tenancyv1alpha1.Workspace, f string) bool {
	for _, x := range ws.Finalizers {
		if x == f {
			return true
		}
	}
	return false
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
