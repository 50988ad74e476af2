package catalog

import (
	"context"
	"fmt"
	"slices"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	providersv1alpha1 "github.com/wharfhub/wharf/hub/apis/providers/v1alpha1"
	"github.com/wharfhub/wharf/hub/registry"
)

// The two kinds differ only in how spec and status are kept apart and how
// spec is validated, so one strategy type serves both, parameterised by
// kindOps.
type kindOps struct {
	// copyStatus sets obj's status to old's (main resource updates) or, with
	// status true, obj's spec and metadata to old's (status updates).
	preserve func(obj, old runtime.Object, status, cleanup bool)
	// clearStatus empties status on create.
	clearStatus func(obj runtime.Object)
	validate    func(obj runtime.Object) field.ErrorList
	validateUpd func(obj, old runtime.Object) field.ErrorList
}

type strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	registry.Defaults
	ops kindOps
	// status marks the strategy of the status subresource.
	status bool
	// cleanup marks the hub's own writer, the only one that may drop a
	// cleanup finalizer.
	cleanup bool
}

func (strategy) NamespaceScoped() bool { return false }

func (s strategy) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	s.ops.clearStatus(obj)
}

func (s strategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	s.ops.preserve(obj, old, s.status, s.cleanup)
}

func nameValidation(name string, prefix bool) []string {
	if prefix && len(name) > 1 && name[len(name)-1] == '-' {
		name = name[:len(name)-1] + "a"
	}
	return validation.IsDNS1123Label(name)
}

func (s strategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	m := metaOf(obj)
	errs := apimachineryvalidation.ValidateObjectMeta(m, false, nameValidation, field.NewPath("metadata"))
	if s.ops.validate != nil {
		errs = append(errs, s.ops.validate(obj)...)
	}
	return errs
}

func (s strategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	if s.status {
		return nil
	}
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(metaOf(obj), metaOf(old), field.NewPath("metadata"))
	errs = append(errs, s.Validate(ctx, obj)...)
	if s.ops.validateUpd != nil {
		errs = append(errs, s.ops.validateUpd(obj, old)...)
	}
	return errs
}

// GetResetFields tells server-side apply which half each endpoint owns.
func (s strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	set := fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
	if s.status {
		set = fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata"))
	}
	return map[fieldpath.APIVersion]*fieldpath.Set{fieldpath.APIVersion(providersv1alpha1.SchemeGroupVersion.String()): set}
}

var catalogOps = kindOps{
	clearStatus: func(obj runtime.Object) {
		// Status is the hub's observation of its replicas: whoever
		// creates an entry (a root admin, or the syncer itself) starts
		// without one, and the syncer writes it through the status store.
		obj.(*providersv1alpha1.CatalogEntry).Status = providersv1alpha1.CatalogEntryStatus{}
	},
	validate: func(obj runtime.Object) field.ErrorList {
		e := obj.(*providersv1alpha1.CatalogEntry)
		var errs field.ErrorList
		for i, a := range e.Spec.APIs {
			p := field.NewPath("spec", "apis").Index(i).Child("group")
			switch owner, shipped := ShippedGroup(a.Group); {
			case ReservedGroup(a.Group):
				errs = append(errs, field.Forbidden(p,
					fmt.Sprintf("API group %q is served by the hub or reserved by Kubernetes; no provider may own it", a.Group)))
			case shipped && owner != e.Name:
				errs = append(errs, field.Forbidden(p,
					fmt.Sprintf("API group %q belongs to the %s provider that ships with the hub; no other provider may own it", a.Group, owner)))
			}
		}
		return errs
	},
	preserve: func(obj, old runtime.Object, status, _ bool) {
		n, o := obj.(*providersv1alpha1.CatalogEntry), old.(*providersv1alpha1.CatalogEntry)
		if status {
			rv := n.ResourceVersion
			n.Spec, n.ObjectMeta = o.Spec, *o.ObjectMeta.DeepCopy()
			n.ResourceVersion = rv
			return
		}
		n.Status = o.Status
	},
}

var bindingOps = kindOps{
	clearStatus: func(obj runtime.Object) {
		b := obj.(*providersv1alpha1.ProviderBinding)
		b.Status = providersv1alpha1.ProviderBindingStatus{}
		// Disabling must remove what enabling set up; the enablement
		// controller drops the finalizer once it has.
		for _, f := range b.Finalizers {
			if f == providersv1alpha1.BindingCleanupFinalizer {
				return
			}
		}
		b.Finalizers = append(b.Finalizers, providersv1alpha1.BindingCleanupFinalizer)
	},
	preserve: func(obj, old runtime.Object, status, cleanup bool) {
		n, o := obj.(*providersv1alpha1.ProviderBinding), old.(*providersv1alpha1.ProviderBinding)
		if status {
			rv := n.ResourceVersion
			n.Spec, n.ObjectMeta = o.Spec, *o.ObjectMeta.DeepCopy()
			n.ResourceVersion = rv
			return
		}
		n.Status = o.Status
		// Only the enablement controller may drop the cleanup finalizer,
		// through its own store, once disabling is done: a client
		// removing it, before or after asking for deletion, would skip
		// the purge and leave the provider's data and the edge-proxy
		// grant behind.
		if !cleanup && slices.Contains(o.Finalizers, providersv1alpha1.BindingCleanupFinalizer) &&
			!slices.Contains(n.Finalizers, providersv1alpha1.BindingCleanupFinalizer) {
			n.Finalizers = append(n.Finalizers, providersv1alpha1.BindingCleanupFinalizer)
		}
	},
	validate: func(obj runtime.Object) field.ErrorList {
		b := obj.(*providersv1alpha1.ProviderBinding)
		p := field.NewPath("spec", "provider")
		if b.Spec.Provider == "" {
			return field.ErrorList{field.Required(p, "the name of a provider in the catalog")}
		}
		if msgs := validation.IsDNS1123Label(b.Spec.Provider); len(msgs) > 0 {
			return field.ErrorList{field.Invalid(p, b.Spec.Provider, msgs[0])}
		}
		return nil
	},
	validateUpd: func(obj, old runtime.Object) field.ErrorList {
		n, o := obj.(*providersv1alpha1.ProviderBinding), old.(*providersv1alpha1.ProviderBinding)
		if n.Spec.Provider != o.Spec.Provider {
			return field.ErrorList{field.Invalid(field.NewPath("spec", "provider"), n.Spec.Provider, "field is immutable")}
		}
		return nil
	},
}
