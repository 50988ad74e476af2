// Package v1alpha1 is the tenancy.wharf.dev/v1alpha1 API: the Workspace type.
//
// A Workspace is cluster-scoped inside its parent workspace. Its name is a DNS
// label; its full path is the parent's path plus ":" plus the name
// (root:acme:team-a). Each workspace owns a logical cluster, identified by a
// stable 16-character base36 id recorded in status.cluster.
//
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=com.github.wharfhub.wharf.hub.apis.tenancy.v1alpha1
// +k8s:deepcopy-gen=package
// +groupName=tenancy.wharf.dev
package v1alpha1
