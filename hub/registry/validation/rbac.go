package validation

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Role validates a Role's rules as upstream's ValidateRole.
func Role(obj runtime.Object) field.ErrorList {
	return rules(obj.(*rbacv1.Role).Rules, true)
}

// ClusterRole validates a ClusterRole's rules and aggregation rule as
// upstream's ValidateClusterRole. Rules next to an aggregationRule are
// allowed, as upstream: the aggregation controller replaces them.
func ClusterRole(obj runtime.Object) field.ErrorList {
	cr := obj.(*rbacv1.ClusterRole)
	errs := rules(cr.Rules, false)
	if cr.AggregationRule == nil {
		return errs
	}
	selPath := field.NewPath("aggregationRule", "clusterRoleSelectors")
	if len(cr.AggregationRule.ClusterRoleSelectors) == 0 {
		errs = append(errs, field.Required(selPath, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
	}
	for i := range cr.AggregationRule.ClusterRoleSelectors {
		sel := &cr.AggregationRule.ClusterRoleSelectors[i]
		errs = append(errs, metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, selPath.Index(i))...)
		if s, err := metav1.LabelSelectorAsSelector(sel); err != nil {
			errs = append(errs, field.Invalid(selPath.Index(i), s, "invalid label selector."))
		}
	}
	return errs
}

// rules validates each rule. kube-apiserver v1.37 checks that verbs are
// there declaratively (DeclarativeValidation is on by default): that error
// has no detail and comes after the hand-written ones, rule by rule.
func rules(rs []rbacv1.PolicyRule, namespaced bool) field.ErrorList {
	var errs, declared field.ErrorList
	for i, r := range rs {
		fld := field.NewPath("rules").Index(i)
		errs = append(errs, policyRule(r, namespaced, fld)...)
		if len(r.Verbs) == 0 {
			declared = append(declared, field.Required(fld.Child("verbs"), ""))
		}
	}
	return append(errs, declared...)
}

// policyRule is upstream's ValidatePolicyRule but for verbs (see rules):
// either non-resource URLs alone (and only in cluster-wide roles) or at
// least one API group and one resource.
func policyRule(r rbacv1.PolicyRule, namespaced bool, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(r.NonResourceURLs) > 0 {
		if namespaced {
			errs = append(errs, field.Invalid(fld.Child("nonResourceURLs"), r.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
		}
		if len(r.APIGroups) > 0 || len(r.Resources) > 0 || len(r.ResourceNames) > 0 {
			errs = append(errs, field.Invalid(fld.Child("nonResourceURLs"), r.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		return errs
	}
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(fld.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(r.Resources) == 0 {
		errs = append(errs, field.Required(fld.Child("resources"), "resource rules must supply at least one resource"))
	}
	return errs
}

// RoleBinding validates roleRef and subjects as upstream's
// ValidateRoleBinding.
func RoleBinding(obj runtime.Object) field.ErrorList {
	rb := obj.(*rbacv1.RoleBinding)
	return binding(rb.RoleRef, rb.Subjects, true)
}

// ClusterRoleBinding validates roleRef and subjects as upstream's
// ValidateClusterRoleBinding.
func ClusterRoleBinding(obj runtime.Object) field.ErrorList {
	crb := obj.(*rbacv1.ClusterRoleBinding)
	return binding(crb.RoleRef, crb.Subjects, false)
}

// RoleBindingUpdate and ClusterRoleBindingUpdate keep roleRef as created:
// what a binding grants is changed by deleting and recreating it.
func RoleBindingUpdate(obj, old runtime.Object) field.ErrorList {
	return roleRefImmutable(obj.(*rbacv1.RoleBinding).RoleRef, old.(*rbacv1.RoleBinding).RoleRef)
}

// ClusterRoleBindingUpdate: see RoleBindingUpdate.
func ClusterRoleBindingUpdate(obj, old runtime.Object) field.ErrorList {
	return roleRefImmutable(obj.(*rbacv1.ClusterRoleBinding).RoleRef, old.(*rbacv1.ClusterRoleBinding).RoleRef)
}

// shownRoleRef is how upstream's message shows a roleRef: its internal type
// has no JSON tags, so the field names are capitalized.
type shownRoleRef struct{ APIGroup, Kind, Name string }

func roleRefImmutable(n, o rbacv1.RoleRef) field.ErrorList {
	if n != o {
		return field.ErrorList{field.Invalid(field.NewPath("roleRef"), shownRoleRef(n), "field is immutable")}
	}
	return nil
}

func binding(ref rbacv1.RoleRef, subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	refPath := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(refPath.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	kinds := []string{"ClusterRole"}
	if namespaced {
		kinds = []string{"Role", "ClusterRole"}
	}
	if !slices.Contains(kinds, ref.Kind) {
		errs = append(errs, field.NotSupported(refPath.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name != "" {
		for _, msg := range path.IsValidPathSegmentName(ref.Name) {
			errs = append(errs, field.Invalid(refPath.Child("name"), ref.Name, msg))
		}
	}
	// Missing names are checked declaratively in v1.37: after the rest, in
	// the order of the type's fields (subjects before roleRef).
	var declared field.ErrorList
	for i, s := range subjects {
		fld := field.NewPath("subjects").Index(i)
		errs = append(errs, subject(s, namespaced, fld)...)
		if s.Name == "" {
			declared = append(declared, field.Required(fld.Child("name"), ""))
		}
	}
	if ref.Name == "" {
		declared = append(declared, field.Required(refPath.Child("name"), ""))
	}
	return append(errs, declared...)
}

// subject is upstream's ValidateRoleBindingSubject but for the missing name
// (see binding). A ServiceAccount of a
// ClusterRoleBinding needs its namespace; in a RoleBinding it defaults to
// the binding's.
func subject(s rbacv1.Subject, namespaced bool, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.Name != "" {
			// ServiceAccount names are DNS subdomains.
			for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(s.Name, false) {
				errs = append(errs, field.Invalid(fld.Child("name"), s.Name, msg))
			}
		}
		if s.APIGroup != "" {
			errs = append(errs, field.NotSupported(fld.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && s.Namespace == "" {
			errs = append(errs, field.Required(fld.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.APIGroup != rbacv1.GroupName {
			errs = append(errs, field.NotSupported(fld.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		errs = append(errs, field.NotSupported(fld.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
	return errs
}
