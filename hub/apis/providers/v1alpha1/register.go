package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of the provider catalog.
const GroupName = "providers.wharf.dev"

// SchemeGroupVersion is the group version used to register these objects.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// Resource returns a GroupResource for a resource of this group.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

var (
	// SchemeBuilder collects the functions that register this group.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme registers the group's types with a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &CatalogEntry{}, &CatalogEntryList{}, &ProviderBinding{}, &ProviderBindingList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}

// ProvidersGroup is the group of every provider identity.
const ProvidersGroup = "system:wharf:providers"

// providerUserPrefix prefixes a provider's user name.
const providerUserPrefix = "system:wharf:provider:"

// ProviderUser is the user name of a provider's own identity.
func ProviderUser(provider string) string { return providerUserPrefix + provider }

// ProviderOfUser returns the provider whose identity a user name is.
func ProviderOfUser(name string) (string, bool) {
	if len(name) <= len(providerUserPrefix) || name[:len(providerUserPrefix)] != providerUserPrefix {
		return "", false
	}
	return name[len(providerUserPrefix):], true
}
