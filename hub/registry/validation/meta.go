package validation

import (
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// standardFinalizers are the finalizer names a built-in object may carry
// without a domain prefix, as upstream's core helper lists them.
var standardFinalizers = map[string]bool{
	"kubernetes":                     true, // core/v1 FinalizerKubernetes
	metav1.FinalizerOrphanDependents: true,
	metav1.FinalizerDeleteDependents: true,
}

// finalizerNotQualified is upstream's message for a finalizer name with no
// domain that is not one of the standard names.
const finalizerNotQualified = "name is neither a standard finalizer name nor is it fully qualified"

// KubeFinalizerNames is the check kube-apiserver adds to the generic
// ObjectMeta validation for the built-in kinds of resource: a finalizer
// name without a "/" must be a standard one. (The generic part, that each
// name is a qualified name, is apimachinery's and already ran.) Leases do
// not get it, their validation uses only the generic part; nor do custom
// resources, where upstream only warns.
func KubeFinalizerNames(resource schema.GroupResource, m metav1.Object) field.ErrorList {
	if resource == coordinationv1.Resource("leases") {
		return nil
	}
	var errs field.ErrorList
	fld := field.NewPath("metadata", "finalizers")
	for i, f := range m.GetFinalizers() {
		errs = append(errs, kubeFinalizerName(f, fld.Index(i))...)
	}
	return errs
}

// FinalizerName is one finalizer name as kube-apiserver checks it: a
// qualified name, and an unqualified one must be a standard finalizer.
func FinalizerName(name string, fld *field.Path) field.ErrorList {
	return append(apimachineryvalidation.ValidateFinalizerName(name, fld), kubeFinalizerName(name, fld)...)
}

func kubeFinalizerName(name string, fld *field.Path) field.ErrorList {
	if !strings.Contains(name, "/") && !standardFinalizers[name] {
		return field.ErrorList{field.Invalid(fld, name, finalizerNotQualified)}
	}
	return nil
}
