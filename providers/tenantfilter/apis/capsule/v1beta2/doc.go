// Package v1beta2 holds Go types for Capsule's capsule.clastix.io/v1beta2
// objects the tenant filter reads: Tenant and CapsuleConfiguration.
//
// The JSON field names follow Capsule's own API, so objects written for
// Capsule (by its users, its Helm chart or its controller) decode here and
// round-trip through our CRDs unchanged. Only the parts the filter or its
// status controller reads are typed in detail; the rest of Capsule's spec
// (quotas, network policies, limit ranges, ...) is kept as raw JSON so that
// nothing is lost when the controller writes a status and no Capsule field
// needs to be mirrored here.
//
// +k8s:deepcopy-gen=package
// +groupName=capsule.clastix.io
package v1beta2
