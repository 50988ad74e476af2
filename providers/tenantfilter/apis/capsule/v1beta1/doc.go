// Package v1beta1 holds Go types for capsule-proxy's capsule.clastix.io/v1beta1
// objects: GlobalProxySettings (cluster-scoped) and ProxySetting (namespaced,
// in a tenant namespace).
//
// The JSON field names follow capsule-proxy's own API so that existing
// objects decode unchanged. Both kinds carry a status written by our status
// controller (observedGeneration and a Ready condition); capsule-proxy's
// objects without a status decode too.
//
// +k8s:deepcopy-gen=package
// +groupName=capsule.clastix.io
package v1beta1
