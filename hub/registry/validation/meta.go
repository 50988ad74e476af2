package validation

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
// ObjectMeta validation for every built-in kind: a finalizer name without
// a "/" must be a standard one. (The generic part, that each name is a
// qualified name, is apimachinery's and already ran.) Custom resources do
// not get it: upstream only warns there.
func KubeFinalizerNames(m metav1.Object) field.ErrorList {
	var errs field.ErrorList
	fld := field.NewPath("metadata", "finalizers")
	for i, f := range m.GetFinalizers() {
		errs = append(errs, kubeFinalizerName(f, fld.Index(i))...)
	}
	return errs
}

func kubeFinalizerName(name string, fld *field.Path) field.ErrorList {
	if !strings.Contains(name, "/") && !standardFinalizers[name] {
		return field.ErrorList{field.Invalid(fld, name, finalizerNotQualified)}
	}
	return nil
}
