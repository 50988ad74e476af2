package validation

import (
	"slices"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// leaseStrategies are the strategies without a domain upstream knows.
var leaseStrategies = []coordinationv1.CoordinatedLeaseStrategy{coordinationv1.OldestEmulationVersion}

// Lease validates a Lease's spec as upstream's ValidateLeaseSpec.
func Lease(obj runtime.Object) field.ErrorList {
	spec := obj.(*coordinationv1.Lease).Spec
	fld := field.NewPath("spec")
	var errs field.ErrorList
	if d := spec.LeaseDurationSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(fld.Child("leaseDurationSeconds"), d, "must be greater than 0"))
	}
	if n := spec.LeaseTransitions; n != nil && *n < 0 {
		errs = append(errs, field.Invalid(fld.Child("leaseTransitions"), n, "must be greater than or equal to 0"))
	}
	if spec.Strategy != nil {
		errs = append(errs, leaseStrategy(*spec.Strategy, fld.Child("strategy"))...)
	}
	if spec.PreferredHolder != nil && *spec.PreferredHolder != "" && (spec.Strategy == nil || *spec.Strategy == "") {
		errs = append(errs, field.Forbidden(fld.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return errs
}

// leaseStrategy is upstream's ValidateCoordinatedLeaseStrategy, including
// its doubled "strategy" in the field path.
func leaseStrategy(s coordinationv1.CoordinatedLeaseStrategy, fld *field.Path) field.ErrorList {
	if !strings.Contains(string(s), "/") {
		if !slices.Contains(leaseStrategies, s) {
			return field.ErrorList{field.NotSupported(fld.Child("strategy"), s, leaseStrategies)}
		}
		return nil
	}
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(string(s)) {
		errs = append(errs, field.Invalid(fld.Child("strategy"), s, msg))
	}
	return errs
}

// DropDisabledLeaseFields clears spec.strategy and spec.preferredHolder
// unless the stored Lease (old, nil on create) already had them: the
// CoordinatedLeaderElection feature they belong to is off by default in
// kube-apiserver v1.37, which then drops them the same way.
func DropDisabledLeaseFields(obj, old runtime.Object) {
	l := obj.(*coordinationv1.Lease)
	var o *coordinationv1.Lease
	if old != nil {
		o = old.(*coordinationv1.Lease)
	}
	if o == nil || o.Spec.Strategy == nil {
		l.Spec.Strategy = nil
	}
	if o == nil || o.Spec.PreferredHolder == nil {
		l.Spec.PreferredHolder = nil
	}
}
