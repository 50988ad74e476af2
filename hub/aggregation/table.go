package aggregation

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/wharfhub/wharf/hub/registry"
)

// table prints kube-apiserver's columns: NAME SERVICE AVAILABLE AGE.
var table = registry.Table{
	Columns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
		{Name: "Service", Type: "string", Description: "The reference to the service that hosts this API endpoint."},
		{Name: "Available", Type: "string", Description: "Whether this service is available."},
		{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
	},
	Cells: func(obj runtime.Object) []interface{} {
		s := obj.(*apiregv1.APIService)
		service := "Local"
		if s.Spec.Service != nil {
			service = s.Spec.Service.Namespace + "/" + s.Spec.Service.Name
		}
		return []interface{}{s.Name, service, availableCell(s), registry.Age(s.CreationTimestamp)}
	},
}

// availableCell is upstream's: the status, and the reason when not True.
func availableCell(s *apiregv1.APIService) string {
	for _, c := range s.Status.Conditions {
		if c.Type != apiregv1.Available {
			continue
		}
		if c.Status == apiregv1.ConditionTrue {
			return string(c.Status)
		}
		return fmt.Sprintf("%s (%s)", c.Status, c.Reason)
	}
	return "Unknown"
}
