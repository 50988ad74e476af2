// Package v1alpha1 is the providers.wharf.dev/v1alpha1 API: CatalogEntry
// and ProviderBinding.
//
// A CatalogEntry describes one provider plugin loaded by the hub. Entries
// are cluster-scoped and live only in the root workspace; the hub writes
// them and every authenticated user may read them. Their status is shared
// by every hub replica on the same etcd: each replica owns one element of
// status.replicas and the aggregate conditions are recomputed from all of
// them.
//
// A ProviderBinding is cluster-scoped in any workspace and enables the
// named provider there: its custom resources become usable and its
// identity gains access to them.
//
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=com.github.wharfhub.wharf.hub.apis.providers.v1alpha1
// +k8s:deepcopy-gen=package
// +groupName=providers.wharf.dev
package v1alpha1
