package resourceproxy

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CRD is the ResourceProxy definition. It is cluster-scoped, as vCluster
// Platform's is: a proxy configures routing for the whole client workspace,
// and APIServices are cluster-scoped too. What a schema can say is said
// with CEL here (one target, known modes, no built-in or provider group, a
// wildcard not mixed with explicit entries of its group/version in one
// object); what needs other objects (conflicts between proxies, the target
// being the client itself, Secret access) is checked by the controller and
// reported in status.conditions.
func CRD() *apiextensionsv1.CustomResourceDefinition {
	str := func(desc string) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "string", Description: desc, MinLength: ptr(int64(1)), MaxLength: ptr(int64(253))}
	}
	optStr := func(desc string) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "string", Description: desc, MaxLength: ptr(int64(253))}
	}
	entry := apiextensionsv1.JSONSchemaProps{
		Type:     "object",
		Required: []string{"group", "version", "resource"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"group":    str("API group, e.g. databases.example.com."),
			"version":  str("API version, e.g. v1."),
			"resource": str("Plural resource name, or * for every resource of the group and version."),
		},
		XValidations: apiextensionsv1.ValidationRules{
			{Rule: `self.group != '' && !self.group.endsWith('.k8s.io') && self.group != 'k8s.io' && !self.group.endsWith('.kubernetes.io') && !self.group.endsWith('.wharf.dev') && self.group != 'wharf.dev' && self.group.contains('.')`,
				Message: "group must be a custom group (built-in *.k8s.io, *.kubernetes.io and provider *.wharf.dev groups cannot be proxied)"},
			{Rule: `self.resource == '*' || self.resource.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')`,
				Message: "resource must be a lowercase plural name or *"},
		},
	}
	spec := apiextensionsv1.JSONSchemaProps{
		Type:     "object",
		Required: []string{"target", "resources"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"target": {
				Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"workspace": optStr("Target workspace path (root:org:ws) on this hub."),
					"external": {
						Type:     "object",
						Required: []string{"secretRef"},
						Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"name": optStr("Cluster name in metrics and messages."),
							"secretRef": {
								Type:     "object",
								Required: []string{"namespace", "name"},
								Properties: map[string]apiextensionsv1.JSONSchemaProps{
									"namespace": str("Namespace of the kubeconfig Secret in this workspace."),
									"name":      str("Name of the Secret."),
									"key":       optStr("Data key holding the kubeconfig; default kubeconfig."),
								},
							},
						},
					},
				},
				XValidations: apiextensionsv1.ValidationRules{
					{Rule: `has(self.workspace) != has(self.external)`, Message: "set exactly one of target.workspace and target.external"},
				},
			},
			"resources": {
				Type: "array", MinItems: ptr(int64(1)), MaxItems: ptr(int64(64)),
				Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &entry},
				XValidations: apiextensionsv1.ValidationRules{
					{Rule: `self.all(a, a.resource != '*' || self.all(b, b.group != a.group || b.version != a.version || b.resource == '*'))`,
						Message: "a * entry and an explicit entry overlap for the same group and version"},
				},
			},
			"accessMode": {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"owned"`)}, {Raw: []byte(`"all"`)}},
				Description: "owned (default): the client sees only objects with its owner labels; all: no filtering."},
		},
	}
	status := apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true)}
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: Resource + "." + Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: Resource, Singular: "resourceproxy", Kind: Kind, ListKind: Kind + "List", ShortNames: []string{"rp"}},
			Scope: apiextensionsv1.ClusterScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: Version, Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type:       "object",
					Required:   []string{"spec"},
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec, "status": status},
				}},
				AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{
					{Name: "Target", Type: "string", JSONPath: ".spec.target.workspace"},
					{Name: "External", Type: "string", JSONPath: ".spec.target.external.name"},
					{Name: "Ready", Type: "string", JSONPath: `.status.conditions[?(@.type=="Ready")].status`},
					{Name: "Reason", Type: "string", JSONPath: `.status.conditions[?(@.type=="Ready")].reason`},
				},
			}},
		},
	}
}

func ptr[T any](v T) *T { return &v }
