package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is Capsule's API group.
const GroupName = "capsule.clastix.io"

// SchemeGroupVersion is capsule.clastix.io/v1beta2.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1beta2"}

// Resource names, as Capsule's CRDs define them.
const (
	ResourceTenants               = "tenants"
	ResourceCapsuleConfigurations = "capsuleconfigurations"
)

// TenantsGVR and CapsuleConfigurationsGVR are the resources for dynamic
// clients and informers.
var (
	TenantsGVR               = SchemeGroupVersion.WithResource(ResourceTenants)
	CapsuleConfigurationsGVR = SchemeGroupVersion.WithResource(ResourceCapsuleConfigurations)
)

// Resource returns a GroupResource for a resource of this group.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

var (
	// SchemeBuilder collects the functions that register this group version.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme registers Tenant and CapsuleConfiguration with a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&Tenant{}, &TenantList{},
		&CapsuleConfiguration{}, &CapsuleConfigurationList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
