package validation

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// StandardObjectCountQuotaNames are upstream's legacy object-count quota
// names; their values, like those of count/*, are integers.
var StandardObjectCountQuotaNames = sets.New(
	"pods", "services", "replicationcontrollers", "resourcequotas", "secrets",
	"configmaps", "persistentvolumeclaims", "services.nodeports", "services.loadbalancers",
)

// standardQuotaNames are the names without a slash upstream accepts in a
// quota: the object counts and the compute and storage resources.
var standardQuotaNames = StandardObjectCountQuotaNames.Union(sets.New(
	"cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.storage",
	"requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage",
))

const (
	isInvalidQuotaResource = "must be a standard resource for quota"
	isNotIntegerMsg        = "must be an integer"
	isNegativeMsg          = "must be greater than or equal to 0"
)

// ResourceQuota validates a ResourceQuota's spec and status as upstream's
// ValidateResourceQuota does for the hard limits; scopes are refused, the
// hub serving no pods for them to select.
func ResourceQuota(obj runtime.Object) field.ErrorList {
	q := obj.(*corev1.ResourceQuota)
	spec := field.NewPath("spec")
	errs := quotaResourceList(q.Spec.Hard, spec.Child("hard"))
	if len(q.Spec.Scopes) > 0 {
		errs = append(errs, field.Forbidden(spec.Child("scopes"), "scopes are not supported: this server serves no pods"))
	}
	if q.Spec.ScopeSelector != nil {
		errs = append(errs, field.Forbidden(spec.Child("scopeSelector"), "scopes are not supported: this server serves no pods"))
	}
	return errs
}

// ResourceQuotaStatus validates the status a status write sets.
func ResourceQuotaStatus(obj runtime.Object) field.ErrorList {
	q := obj.(*corev1.ResourceQuota)
	status := field.NewPath("status")
	errs := quotaResourceList(q.Status.Hard, status.Child("hard"))
	return append(errs, quotaResourceList(q.Status.Used, status.Child("used"))...)
}

func quotaResourceList(l corev1.ResourceList, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for name, q := range l {
		p := fld.Key(string(name))
		errs = append(errs, quotaResourceName(string(name), p)...)
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(p, q.String(), isNegativeMsg))
		}
		if isIntegerQuotaName(string(name)) && q.MilliValue()%1000 != 0 {
			errs = append(errs, field.Invalid(p, q.String(), isNotIntegerMsg))
		}
	}
	return errs
}

// quotaResourceName is upstream's validateResourceQuotaResourceName: a
// qualified name, and one of the standard names unless it has a slash.
func quotaResourceName(name string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(name) {
		errs = append(errs, field.Invalid(fld, name, msg))
	}
	if len(errs) > 0 {
		return errs
	}
	// Upstream reports both its general resource-name rule and the
	// quota's for a bare unknown name.
	if !strings.Contains(name, "/") && !standardQuotaNames.Has(name) && !strings.HasPrefix(name, "requests.hugepages-") && !strings.HasPrefix(name, "hugepages-") {
		errs = append(errs, field.Invalid(fld, name, "must be a standard resource type or fully qualified"),
			field.Invalid(fld, name, isInvalidQuotaResource))
	}
	return errs
}

// isIntegerQuotaName is upstream's IsIntegerResourceName for quotas.
func isIntegerQuotaName(name string) bool {
	return StandardObjectCountQuotaNames.Has(name) || strings.HasPrefix(name, "count/")
}
