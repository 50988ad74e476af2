package registry

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apiserver/pkg/registry/rest"
)

// Table gives kubectl get the columns of a hub kind: Cells turns one
// object (never a list) into a row matching Columns.
type Table struct {
	Columns []metav1.TableColumnDefinition
	Cells   func(obj runtime.Object) []interface{}
}

var _ rest.TableConvertor = Table{}

// ConvertToTable renders one object or every item of a list.
func (t Table) ConvertToTable(_ context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	items := []runtime.Object{obj}
	table := &metav1.Table{}
	if meta.IsListType(obj) {
		var err error
		if items, err = meta.ExtractList(obj); err != nil {
			return nil, fmt.Errorf("listing %T: %w", obj, err)
		}
		m, err := meta.ListAccessor(obj)
		if err != nil {
			return nil, err
		}
		table.ResourceVersion, table.Continue, table.RemainingItemCount = m.GetResourceVersion(), m.GetContinue(), m.GetRemainingItemCount()
	} else if m, err := meta.Accessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
	if opt, ok := tableOptions.(*metav1.TableOptions); !ok || !opt.NoHeaders {
		table.ColumnDefinitions = t.Columns
	}
	for _, it := range items {
		table.Rows = append(table.Rows, metav1.TableRow{Cells: t.Cells(it), Object: runtime.RawExtension{Object: it}})
	}
	return table, nil
}

// Age is the AGE column, as kubectl prints it.
func Age(created metav1.Time) string {
	if created.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(metav1.Now().Sub(created.Time))
}
