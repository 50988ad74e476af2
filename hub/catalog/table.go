package catalog

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	providersv1alpha1 "github.com/wharfhub/wharf/hub/apis/providers/v1alpha1"
	"github.com/wharfhub/wharf/hub/registry"
)

// entryTable and bindingTable give kubectl get their columns.
var entryTable = registry.Table{
	Columns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: "Provider name"},
		{Name: "Version", Type: "string", Description: "Provider version"},
		{Name: "Ready", Type: "string", Description: "Ready condition"},
		{Name: "Restarts", Type: "integer", Description: "Restarts across hub replicas"},
		{Name: "Replica", Type: "string", Description: "Hub replica running it"},
		{Name: "Message", Type: "string", Priority: 1, Description: "Ready condition message"},
		{Name: "Age", Type: "string", Description: "Time since creation"},
	},
	Cells: func(obj runtime.Object) []interface{} {
		e := obj.(*providersv1alpha1.CatalogEntry)
		ready, msg := conditionCell(e.Status.Conditions, providersv1alpha1.ConditionReady)
		return []interface{}{e.Name, e.Status.Version, ready, int64(e.Status.RestartCount), e.Status.HubReplica, msg, registry.Age(e.CreationTimestamp)}
	},
}

var bindingTable = registry.Table{
	Columns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: "Binding name"},
		{Name: "Provider", Type: "string", Description: "Enabled provider"},
		{Name: "Bound", Type: "string", Description: "Bound condition"},
		{Name: "Age", Type: "string", Description: "Time since creation"},
	},
	Cells: func(obj runtime.Object) []interface{} {
		b := obj.(*providersv1alpha1.ProviderBinding)
		bound, _ := conditionCell(b.Status.Conditions, providersv1alpha1.ConditionBound)
		return []interface{}{b.Name, b.Spec.Provider, bound, registry.Age(b.CreationTimestamp)}
	},
}

func conditionCell(conds []metav1.Condition, t string) (string, string) {
	if c := meta.FindStatusCondition(conds, t); c != nil {
		return string(c.Status), strings.TrimSpace(c.Message)
	}
	return "Unknown", ""
}

func metaOf(obj runtime.Object) *metav1.ObjectMeta {
	switch o := obj.(type) {
	case *providersv1alpha1.CatalogEntry:
		return &o.ObjectMeta
	case *providersv1alpha1.ProviderBinding:
		return &o.ObjectMeta
	}
	return &metav1.ObjectMeta{}
}
