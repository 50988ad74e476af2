package registry

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/wharfhub/wharf/hub/registry/validation"
)

// resourceQuotaKind is core/v1 ResourceQuota. As upstream, a write of the
// main resource keeps the stored status; unlike upstream, it also sets
// status.hard from spec.hard at once, so that admission enforces a new or
// changed quota without waiting for a controller (hub/resourcequota).
var resourceQuotaKind = &Kind{
	Resource: corev1.Resource("resourcequotas"), Singular: "resourcequota", Namespaced: true, ShortNames: []string{"quota"},
	New: func() runtime.Object { return &corev1.ResourceQuota{} }, NewList: func() runtime.Object { return &corev1.ResourceQuotaList{} },
	Table:    resourceQuotaTable,
	Validate: validation.ResourceQuota,
	PrepareForCreate: func(obj runtime.Object) {
		q := obj.(*corev1.ResourceQuota)
		q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard.DeepCopy()}
	},
	PrepareForUpdate: func(obj, old runtime.Object) {
		q, o := obj.(*corev1.ResourceQuota), old.(*corev1.ResourceQuota)
		q.Status = *o.Status.DeepCopy()
		q.Status.Hard = q.Spec.Hard.DeepCopy()
	},
}

// resourceQuotaStatusStrategy serves resourcequotas/status: only status
// changes.
type resourceQuotaStatusStrategy struct{ strategy }

func (s resourceQuotaStatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*corev1.ResourceQuota).Spec = *old.(*corev1.ResourceQuota).Spec.DeepCopy()
}

func (s resourceQuotaStatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	q, o := obj.(*corev1.ResourceQuota), old.(*corev1.ResourceQuota)
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&q.ObjectMeta, &o.ObjectMeta, field.NewPath("metadata"))
	return append(errs, validation.ResourceQuotaStatus(q)...)
}

func (s resourceQuotaStatusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetFields(fieldpath.MakePathOrDie("spec"))
}

// resourceQuotaMainReset: the main resource's writes leave status alone.
type resourceQuotaMainReset struct{}

func (resourceQuotaMainReset) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetFields(fieldpath.MakePathOrDie("status"))
}

// newResourceQuotaStatus derives resourcequotas/status from the completed
// main store: same storage, the status strategy for updates.
func newResourceQuotaStatus(main *genericregistry.Store) *StatusREST {
	main.ResetFieldsStrategy = resourceQuotaMainReset{}
	return newStatusREST(main, resourceQuotaStatusStrategy{main.UpdateStrategy.(strategy)})
}

// resourceQuotaTable is upstream's printResourceQuota (columns in
// kube-apiserver 1.37's order): each hard resource as "name: used/hard",
// limits.* in LIMIT and the rest in REQUEST.
var resourceQuotaTable = Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Request", Type: "string", Description: "Request represents a minimum amount of cpu/memory that a container may consume."},
		{Name: "Limit", Type: "string", Description: "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."},
		ageColumn,
	},
	Cells: func(obj runtime.Object) []interface{} {
		q := obj.(*corev1.ResourceQuota)
		names := make([]string, 0, len(q.Status.Hard))
		for n := range q.Status.Hard {
			names = append(names, string(n))
		}
		sort.Strings(names)
		var request, limit []string
		for _, n := range names {
			used, hard := q.Status.Used[corev1.ResourceName(n)], q.Status.Hard[corev1.ResourceName(n)]
			cell := fmt.Sprintf("%s: %s/%s", n, used.String(), hard.String())
			if pieces := strings.Split(n, "."); len(pieces) > 1 && pieces[0] == "limits" {
				limit = append(limit, cell)
			} else {
				request = append(request, cell)
			}
		}
		return []interface{}{q.Name, strings.Join(request, ", "), strings.Join(limit, ", "), Age(q.CreationTimestamp)}
	},
}
