package registry_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	tenancyv1alpha1 "github.com/wharfhub/wharf/hub/apis/tenancy/v1alpha1"
	"github.com/wharfhub/wharf/hub/registry"
)

func TestTable(t *testing.T) {
	tbl := registry.Table{
		Columns: []metav1.TableColumnDefinition{{Name: "Name"}, {Name: "Phase"}},
		Cells: func(obj runtime.Object) []interface{} {
			ws := obj.(*tenancyv1alpha1.Workspace)
			return []interface{}{ws.Name, string(ws.Status.Phase)}
		},
	}
	one := tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "7"}, Status: tenancyv1alpha1.WorkspaceStatus{Phase: "Ready"}}
	list := &tenancyv1alpha1.WorkspaceList{
		ListMeta: metav1.ListMeta{ResourceVersion: "9", Continue: "next"},
		Items:    []tenancyv1alpha1.Workspace{one, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}},
	}
	for _, tc := range []struct {
		name     string
		obj      runtime.Object
		opts     runtime.Object
		rows     []string
		rv, cont string
		headers  bool
	}{
		{"object", &one, nil, []string{"a"}, "7", "", true},
		{"list", list, nil, []string{"a", "b"}, "9", "next", true},
		{"no headers", list, &metav1.TableOptions{NoHeaders: true}, []string{"a", "b"}, "9", "next", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tbl.ConvertToTable(context.Background(), tc.obj, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Rows) != len(tc.rows) || got.ResourceVersion != tc.rv || got.Continue != tc.cont || (len(got.ColumnDefinitions) > 0) != tc.headers {
				t.Fatalf("table %+v", got)
			}
			for i, name := range tc.rows {
				if got.Rows[i].Cells[0] != name || got.Rows[i].Object.Object == nil {
					t.Errorf("row %d = %+v, want %s", i, got.Rows[i], name)
				}
			}
		})
	}
}
