package catalog

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apiserver/pkg/registry/rest"

	providersv1alpha1 "github.com/wharfhub/wharf/hub/apis/providers/v1alpha1"
)

// tableFunc gives kubectl get its columns: cells turns one item into a row.
type tableFunc struct {
	columns []metav1.TableColumnDefinition
	items   func(obj runtime.Object) ([]runtime.Object, bool)
	cells   func(obj runtime.Object) []interface{}
}

var _ rest.TableConvertor = tableFunc{}

var entryTable = tableFunc{
	columns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: "Provider name"},
		{Name: "Version", Type: "string", Description: "Provider version"},
		{Name: "Ready", Type: "string", Description: "Ready condition"},
		{Name: "Restarts", Type: "integer", Description: "Restarts across hub replicas"},
		{Name: "Replica", Type: "string", Description: "Hub replica running it"},
		{Name: "Message", Type: "string", Priority: 1, Description: "Ready condition message"},
		{Name: "Age", Type: "string", Description: "Time since creation"},
	},
	items: func(obj runtime.Object) ([]runtime.Object, bool) {
		switch o := obj.(type) {
		case *providersv1alpha1.CatalogEntry:
			return []runtime.Object{o}, true
		case *providersv1alpha1.CatalogEntryList:
			out := make([]runtime.Object, len(o.Items))
			for i := range o.Items {
				out[i] = &o.Items[i]
			}
			return out, true
		}
		return nil, false
	},
	cells: func(obj runtime.Object) []interface{} {
		e := obj.(*providersv1alpha1.CatalogEntry)
		ready, msg := conditionCell(e.Status.Conditions, providersv1alpha1.ConditionReady)
		return []interface{}{e.Name, e.Status.Version, ready, int64(e.Status.RestartCount), e.Status.HubReplica, msg, age(e.CreationTimestamp)}
	},
}

var bindingTable = tableFunc{
	columns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: "Binding name"},
		{Name: "Provider", Type: "string", Description: "Enabled provider"},
		{Name: "Bound", Type: "string", Description: "Bound condition"},
		{Name: "Age", Type: "string", Description: "Time since creation"},
	},
	items: func(obj runtime.Object) ([]runtime.Object, bool) {
		switch o := obj.(type) {
		case *providersv1alpha1.ProviderBinding:
			return []runtime.Object{o}, true
		case *providersv1alpha1.ProviderBindingList:
			out := make([]runtime.Object, len(o.Items))
			for i := range o.Items {
				out[i] = &o.Items[i]
			}
			return out, true
		}
		return nil, false
	},
	cells: func(obj runtime.Object) []interface{} {
		b := obj.(*providersv1alpha1.ProviderBinding)
		bound, _ := conditionCell(b.Status.Conditions, providersv1alpha1.ConditionBound)
		return []interface{}{b.Name, b.Spec.Provider, bound, age(b.CreationTimestamp)}
	},
}

func conditionCell(conds []metav1.Condition, t string) (string, string) {
	if c := meta.FindStatusCondition(conds, t); c != nil {
		return string(c.Status), strings.TrimSpace(c.Message)
	}
	return "Unknown", ""
}

func age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(metav1.Now().Sub(t.Time))
}

func (f tableFunc) ConvertToTable(ctx context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	items, ok := f.items(obj)
	if !ok {
		return nil, fmt.Errorf("unexpected object %T", obj)
	}
	table := &metav1.Table{}
	if opt, ok := tableOptions.(*metav1.TableOptions); !ok || !opt.NoHeaders {
		table.ColumnDefinitions = f.columns
	}
	for _, it := range items {
		table.Rows = append(table.Rows, metav1.TableRow{Cells: f.cells(it), Object: runtime.RawExtension{Object: it}})
	}
	if m, err := meta.ListAccessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
		table.Continue = m.GetContinue()
		table.RemainingItemCount = m.GetRemainingItemCount()
	} else if m, err := meta.Accessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
	return table, nil
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
