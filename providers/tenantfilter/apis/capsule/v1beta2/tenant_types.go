package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Labels through which a namespace belongs to a tenant. Capsule writes either,
// depending on its version; the filter honours both (and an ownerReference to
// the Tenant).
const (
	TenantLabel        = "capsule.clastix.io/tenant"
	ProjectTenantLabel = "projectcapsule.dev/tenant"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Tenant is Capsule's cluster-scoped Tenant (capsule.clastix.io/v1beta2).
type Tenant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TenantSpec   `json:"spec,omitempty"`
	Status TenantStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TenantList is a list of Tenants.
type TenantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Tenant `json:"items"`
}

// TenantSpec is the part of Capsule's TenantSpec the filter reads, plus the
// rest kept verbatim.
type TenantSpec struct {
	// Owners may use the tenant's namespaces; their proxySettings grant
	// class reads (and legacy Update/Delete) through the proxy.
	Owners []OwnerSpec `json:"owners"`
	// NamespaceOptions carries the namespace quota (a printer column) and
	// additional metadata Capsule applies.
	NamespaceOptions *NamespaceOptions `json:"namespaceOptions,omitempty"`
	// NodeSelector restricts the nodes the tenant's pods (and hence its
	// owners' node reads) may use; empty means all nodes.
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// StorageClasses, PriorityClasses and RuntimeClasses are the classes the
	// tenant may use.
	StorageClasses  *DefaultAllowedListSpec `json:"storageClasses,omitempty"`
	PriorityClasses *DefaultAllowedListSpec `json:"priorityClasses,omitempty"`
	RuntimeClasses  *DefaultAllowedListSpec `json:"runtimeClasses,omitempty"`
	IngressOptions  IngressOptions          `json:"ingressOptions,omitempty"`
	Cordoned        bool                    `json:"cordoned,omitempty"`
	PreventDeletion bool                    `json:"preventDeletion,omitempty"`

	// Capsule fields the filter does not read, kept as raw JSON so a status
	// write or a decode/encode round trip loses nothing.
	ServiceOptions         *runtime.RawExtension  `json:"serviceOptions,omitempty"`
	ContainerRegistries    *runtime.RawExtension  `json:"containerRegistries,omitempty"`
	NetworkPolicies        *runtime.RawExtension  `json:"networkPolicies,omitempty"`
	LimitRanges            *runtime.RawExtension  `json:"limitRanges,omitempty"`
	ResourceQuota          *runtime.RawExtension  `json:"resourceQuotas,omitempty"`
	AdditionalRoleBindings []runtime.RawExtension `json:"additionalRoleBindings,omitempty"`
	ImagePullPolicies      []string               `json:"imagePullPolicies,omitempty"`
	GatewayOptions         *runtime.RawExtension  `json:"gatewayOptions,omitempty"`
	DeviceClasses          *runtime.RawExtension  `json:"deviceClasses,omitempty"`
	Permissions            *runtime.RawExtension  `json:"permissions,omitempty"`
	PodOptions             *runtime.RawExtension  `json:"podOptions,omitempty"`
}

// OwnerKind is User, Group or ServiceAccount.
type OwnerKind string

// Owner kinds.
const (
	UserOwner           OwnerKind = "User"
	GroupOwner          OwnerKind = "Group"
	ServiceAccountOwner OwnerKind = "ServiceAccount"
)

// OwnerSpec is one tenant owner.
type OwnerSpec struct {
	Kind OwnerKind `json:"kind"`
	// Name is the user or group name; for a ServiceAccount it is the full
	// system:serviceaccount:<ns>:<name> username, as Capsule stores it.
	Name         string   `json:"name"`
	ClusterRoles []string `json:"clusterRoles,omitempty"`
	// ProxyOperations are the owner's class grants through the proxy.
	ProxyOperations []ProxySettings `json:"proxySettings,omitempty"`
	// Labels and Annotations (newer Capsule) are kept verbatim.
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ProxyServiceKind names a class of cluster-scoped objects an owner may be
// granted.
type ProxyServiceKind string

// Proxy service kinds, as Capsule's enum has them.
const (
	NodesProxy             ProxyServiceKind = "Nodes"
	StorageClassesProxy    ProxyServiceKind = "StorageClasses"
	IngressClassesProxy    ProxyServiceKind = "IngressClasses"
	PriorityClassesProxy   ProxyServiceKind = "PriorityClasses"
	RuntimeClassesProxy    ProxyServiceKind = "RuntimeClasses"
	PersistentVolumesProxy ProxyServiceKind = "PersistentVolumes"
)

// ProxyOperation is List, Update or Delete.
type ProxyOperation string

// Proxy operations.
const (
	ListOperation   ProxyOperation = "List"
	UpdateOperation ProxyOperation = "Update"
	DeleteOperation ProxyOperation = "Delete"
)

// ProxySettings is one class grant: a kind and the operations allowed on it.
type ProxySettings struct {
	Kind       ProxyServiceKind `json:"kind"`
	Operations []ProxyOperation `json:"operations"`
}

// AllowedListSpec is Capsule's exact-or-regex allow list.
type AllowedListSpec struct {
	Exact []string `json:"allowed,omitempty"`
	Regex string   `json:"allowedRegex,omitempty"`
}

// SelectorAllowedListSpec adds a label selector (inlined, as Capsule does:
// matchLabels and matchExpressions sit next to allowed and allowedRegex).
type SelectorAllowedListSpec struct {
	AllowedListSpec      `json:",inline"`
	metav1.LabelSelector `json:",inline"`
}

// DefaultAllowedListSpec is Capsule's "default allowed list": the allow
// list, the selector, and a default class name.
type DefaultAllowedListSpec struct {
	SelectorAllowedListSpec `json:",inline"`
	Default                 string `json:"default,omitempty"`
}

// IngressOptions is the part of Capsule's ingress options the filter reads.
type IngressOptions struct {
	AllowedClasses *DefaultAllowedListSpec `json:"allowedClasses,omitempty"`
	// Kept verbatim.
	HostnameCollisionScope string                `json:"hostnameCollisionScope,omitempty"`
	AllowedHostnames       *runtime.RawExtension `json:"allowedHostnames,omitempty"`
	AllowWildcardHostnames bool                  `json:"allowWildcardHostnames,omitempty"`
}

// NamespaceOptions is the part of Capsule's namespace options the filter
// reads (the quota) plus the rest verbatim.
type NamespaceOptions struct {
	Quota                  *int32                 `json:"quota,omitempty"`
	AdditionalMetadata     *runtime.RawExtension  `json:"additionalMetadata,omitempty"`
	AdditionalMetadataList []runtime.RawExtension `json:"additionalMetadataList,omitempty"`
	ForbiddenLabels        *runtime.RawExtension  `json:"forbiddenLabels,omitempty"`
	ForbiddenAnnotations   *runtime.RawExtension  `json:"forbiddenAnnotations,omitempty"`
	RequiredMetadata       *runtime.RawExtension  `json:"requiredMetadata,omitempty"`
	ManagedMetadataOnly    bool                   `json:"managedMetadataOnly,omitempty"`
}

// TenantState is Active or Cordoned.
type TenantState string

// Tenant states.
const (
	TenantStateActive   TenantState = "Active"
	TenantStateCordoned TenantState = "Cordoned"
)

// TenantStatus is what Capsule (or our status controller) reports.
type TenantStatus struct {
	State      TenantState        `json:"state,omitempty"`
	Size       uint               `json:"size"`
	Namespaces []string           `json:"namespaces,omitempty"`
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
