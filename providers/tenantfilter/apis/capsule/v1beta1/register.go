package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is Capsule's API group, which capsule-proxy's kinds share.
const GroupName = "capsule.clastix.io"

// SchemeGroupVersion is capsule.clastix.io/v1beta1.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1beta1"}

// Resource names, as capsule-proxy's CRDs define them.
const (
	ResourceGlobalProxySettings = "globalproxysettings"
	ResourceProxySettings       = "proxysettings"
)

// GVRs for dynamic clients and informers.
var (
	GlobalProxySettingsGVR = SchemeGroupVersion.WithResource(ResourceGlobalProxySettings)
	ProxySettingsGVR       = SchemeGroupVersion.WithResource(ResourceProxySettings)
)

// Resource returns a GroupResource for a resource of this group.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

var (
	// SchemeBuilder collects the functions that register this group version.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme registers GlobalProxySettings and ProxySetting with a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&GlobalProxySettings{}, &GlobalProxySettingsList{},
		&ProxySetting{}, &ProxySettingList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
