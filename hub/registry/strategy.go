package registry

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/wharfhub/wharf/hub/registry/validation"
)

// strategy is the create/update/delete strategy shared by the built-in types.
type strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	Defaults
	kind *Kind
}

var (
	_ rest.RESTCreateStrategy = strategy{}
	_ rest.RESTUpdateStrategy = strategy{}
	_ rest.RESTDeleteStrategy = strategy{}
)

func (s strategy) NamespaceScoped() bool { return s.kind.Namespaced }

func (s strategy) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	if s.kind.PrepareForCreate != nil {
		s.kind.PrepareForCreate(obj)
	}
}

func (s strategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	if s.kind.PrepareForUpdate != nil {
		s.kind.PrepareForUpdate(obj, old)
	}
}

func (s strategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	m, err := meta.Accessor(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("metadata"), err)}
	}
	errs := apimachineryvalidation.ValidateObjectMetaAccessor(m, s.kind.Namespaced, s.kind.nameValidation(), field.NewPath("metadata"))
	// Built-in kinds also hold finalizer names to kube's standard-or-qualified rule.
	errs = append(errs, validation.KubeFinalizerNames(s.kind.Resource, m)...)
	if s.kind.Validate != nil {
		errs = append(errs, s.kind.Validate(obj)...)
	}
	return errs
}

func (s strategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	newMeta, err := meta.Accessor(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("metadata"), err)}
	}
	oldMeta, err := meta.Accessor(old)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("metadata"), err)}
	}
	// Upstream's order, which the error message keeps: metadata changes,
	// the type's update rules, then the new object as a whole. Errors found
	// twice (finalizer names) are reported once.
	errs := apimachineryvalidation.ValidateObjectMetaAccessorUpdate(newMeta, oldMeta, field.NewPath("metadata"))
	errs = append(errs, validation.KubeFinalizerNames(s.kind.Resource, newMeta)...)
	if s.kind.ValidateUpdate != nil {
		errs = append(errs, s.kind.ValidateUpdate(obj, old)...)
	}
	return append(errs, s.Validate(ctx, obj)...)
}

// Defaults holds the strategy answers every hub type shares: no warnings,
// nothing to canonicalize, no create-on-update, and unconditional updates
// allowed (as upstream for these kinds). Embed it in a strategy.
type Defaults struct{}

func (Defaults) WarningsOnCreate(ctx context.Context, obj runtime.Object) []string { return nil }

func (Defaults) WarningsOnUpdate(ctx context.Context, obj, old runtime.Object) []string {
	return nil
}

func (Defaults) Canonicalize(obj runtime.Object) {}

func (Defaults) AllowCreateOnUpdate(context.Context) bool { return false }

func (Defaults) AllowUnconditionalUpdate(context.Context) bool { return true }
