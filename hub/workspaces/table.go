package workspaces

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	tenancyv1alpha1 "github.com/wharfhub/wharf/hub/apis/tenancy/v1alpha1"
	"github.com/wharfhub/wharf/hub/registry"
)

// table gives kubectl get workspaces its columns.
var table = registry.Table{
	Columns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: "Name of the workspace"},
		{Name: "Phase", Type: "string", Description: "Lifecycle phase"},
		{Name: "Cluster", Type: "string", Description: "Logical cluster id"},
		{Name: "URL", Type: "string", Description: "Base URL of the workspace API"},
		{Name: "Age", Type: "string", Description: "Time since creation"},
	},
	Cells: func(obj runtime.Object) []interface{} {
		ws := obj.(*tenancyv1alpha1.Workspace)
		return []interface{}{ws.Name, string(ws.Status.Phase), ws.Status.Cluster, ws.Status.URL, registry.Age(ws.CreationTimestamp)}
	},
}
