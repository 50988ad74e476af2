package registry

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/wharfhub/wharf/hub/namespaces"
	"github.com/wharfhub/wharf/hub/registry/validation"
)

// Namespaces follow kube-apiserver's model: spec.finalizers holds the
// namespace on deletion ("kubernetes", removed through /finalize by the
// namespace controller once the content is gone), the main resource can
// change neither spec.finalizers nor status, /status changes only status
// and /finalize only spec. metadata.finalizers stay the client's.
//
// Earlier hubs held deletion with the metadata finalizer
// namespaces.ContentFinalizer. A stored namespace that still carries it is
// migrated by its next write: the metadata finalizer becomes
// spec.finalizers "kubernetes", so a client can no more skip the content
// deletion by removing it than it can through the main resource today.

// prepareNamespace is PrepareForCreate: status is Active, spec.finalizers
// has "kubernetes", and the name label is the name.
func prepareNamespace(obj runtime.Object) {
	ns := obj.(*corev1.Namespace)
	ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
	ns.Finalizers = withoutLegacy(ns.Finalizers)
	ensureKubernetesFinalizer(ns)
	setNameLabel(ns)
}

// prepareNamespaceUpdate is the main resource's PrepareForUpdate.
func prepareNamespaceUpdate(obj, old runtime.Object) {
	ns, o := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	ns.Spec.Finalizers = slices.Clone(o.Spec.Finalizers)
	ns.Status = o.Status
	if ns.DeletionTimestamp != nil || o.DeletionTimestamp != nil {
		// A namespace deleted by an earlier hub may still say Active.
		ns.Status.Phase = corev1.NamespaceTerminating
	}
	migrateLegacy(ns, o, true)
	setNameLabel(ns)
}

// migrateLegacy drops the old metadata content finalizer from ns. When old
// carried it and keepHold is set, spec.finalizers takes over the hold.
func migrateLegacy(ns, old *corev1.Namespace, keepHold bool) {
	legacy := hasLegacy(old) || hasLegacy(ns)
	ns.Finalizers = withoutLegacy(ns.Finalizers)
	if legacy && keepHold {
		ensureKubernetesFinalizer(ns)
	}
}

func hasLegacy(ns *corev1.Namespace) bool {
	return slices.Contains(ns.Finalizers, namespaces.ContentFinalizer)
}

func withoutLegacy(fs []string) []string {
	if !slices.Contains(fs, namespaces.ContentFinalizer) {
		return fs
	}
	out := slices.DeleteFunc(slices.Clone(fs), func(f string) bool { return f == namespaces.ContentFinalizer })
	if len(out) == 0 {
		return nil
	}
	return out
}

func ensureKubernetesFinalizer(ns *corev1.Namespace) {
	if !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
	}
}

// setNameLabel keeps kubernetes.io/metadata.name equal to the name, as
// upstream's defaulting does on every write: a client cannot change or
// remove it.
func setNameLabel(ns *corev1.Namespace) {
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
}

// validateNamespace checks spec.finalizers as upstream's finalize
// validation does, one path index per name.
func validateNamespace(obj runtime.Object) field.ErrorList {
	ns := obj.(*corev1.Namespace)
	fld := field.NewPath("spec", "finalizers")
	var errs field.ErrorList
	for i, f := range ns.Spec.Finalizers {
		errs = append(errs, validation.FinalizerName(string(f), fld.Index(i))...)
	}
	return errs
}

// namespaceStatusStrategy serves /status: only status changes.
type namespaceStatusStrategy struct{ strategy }

func (s namespaceStatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	ns, o := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	ns.Spec = *o.Spec.DeepCopy()
	migrateLegacy(ns, o, true)
	setNameLabel(ns)
}

func (s namespaceStatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	ns, o := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&ns.ObjectMeta, &o.ObjectMeta, field.NewPath("metadata"))
	phase := field.NewPath("status", "Phase")
	if ns.DeletionTimestamp.IsZero() {
		if ns.Status.Phase != corev1.NamespaceActive {
			errs = append(errs, field.Invalid(phase, ns.Status.Phase, "may only be 'Active' if `deletionTimestamp` is empty"))
		}
	} else if ns.Status.Phase != corev1.NamespaceTerminating {
		errs = append(errs, field.Invalid(phase, ns.Status.Phase, "may only be 'Terminating' if `deletionTimestamp` is not empty"))
	}
	return errs
}

func (s namespaceStatusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetFields(fieldpath.MakePathOrDie("spec"))
}

// namespaceFinalizeStrategy serves /finalize: only spec.finalizers change.
// It is the one way to release a namespace's hold, and the namespace
// controller's: it also drops the legacy metadata finalizer.
type namespaceFinalizeStrategy struct{ strategy }

func (s namespaceFinalizeStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	ns, o := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	ns.Status = o.Status
	migrateLegacy(ns, o, false)
	setNameLabel(ns)
}

func (s namespaceFinalizeStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	ns, o := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&ns.ObjectMeta, &o.ObjectMeta, field.NewPath("metadata"))
	return append(errs, validateNamespace(ns)...)
}

func (s namespaceFinalizeStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetFields(fieldpath.MakePathOrDie("status"))
}

// namespaceResetFields: the main resource owns neither status nor
// spec.finalizers (server-side apply does not record them for it).
type namespaceResetFields struct{}

func (namespaceResetFields) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetFields(fieldpath.MakePathOrDie("status"), fieldpath.MakePathOrDie("spec", "finalizers"))
}

func resetFields(paths ...fieldpath.Path) map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{"v1": fieldpath.NewSet(paths...)}
}
