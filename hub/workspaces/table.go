package workspaces

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apiserver/pkg/registry/rest"

	tenancyv1alpha1 "github.com/wharfhub/wharf/hub/apis/tenancy/v1alpha1"
)

// tableConvertor gives kubectl get workspaces its columns.
type tableConvertor struct{}

var _ rest.TableConvertor = tableConvertor{}

var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name of the workspace"},
	{Name: "Phase", Type: "string", Description: "Lifecycle phase"},
	{Name: "Cluster", Type: "string", Description: "Logical cluster id"},
	{Name: "URL", Type: "string", Description: "Base URL of the workspace API"},
	{Name: "Age", Type: "string", Description: "Time since creation"},
}

func (tableConvertor) ConvertToTable(ctx context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	var items []tenancyv1alpha1.Workspace
	table := &metav1.Table{}
	switch o := obj.(type) {
	case *tenancyv1alpha1.Workspace:
		items = []tenancyv1alpha1.Workspace{*o}
		table.ResourceVersion = o.ResourceVersion
	case *tenancyv1alpha1.WorkspaceList:
		items = o.Items
		table.ResourceVersion, table.Continue, table.RemainingItemCount = o.ResourceVersion, o.Continue, o.RemainingItemCount
	default:
		return nil, fmt.Errorf("unexpected object %T", obj)
	}
	if opt, ok := tableOptions.(*metav1.TableOptions); !ok || !opt.NoHeaders {
		table.ColumnDefinitions = columns
	}
	for i := range items {
		ws := &items[i]
		age := "<unknown>"
		if !ws.CreationTimestamp.IsZero() {
			age = duration.HumanDuration(metav1.Now().Sub(ws.CreationTimestamp.Time))
		}
		table.Rows = append(table.Rows, metav1.TableRow{
			Cells:  []interface{}{ws.Name, string(ws.Status.Phase), ws.Status.Cluster, ws.Status.URL, age},
			Object: runtime.RawExtension{Object: ws},
		})
	}
	if m, err := meta.ListAccessor(obj); err == nil && table.ResourceVersion == "" {
		table.ResourceVersion = m.GetResourceVersion()
	}
	return table, nil
}
