package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
)

// ConditionReady is the condition type the status controller maintains on
// both kinds.
const ConditionReady = "Ready"

// ClusterResourceOperation is List or Get (List implies Get).
type ClusterResourceOperation string

// Cluster resource operations. Validation rejects any other value.
const (
	ClusterResourceOperationList ClusterResourceOperation = "List"
	ClusterResourceOperationGet  ClusterResourceOperation = "Get"
)

// ClusterResource selects labelled cluster-scoped objects of some kinds.
type ClusterResource struct {
	// APIGroups: "" is the core group, "*" every group, a pattern with "/"
	// matches <group>/<version>.
	APIGroups []string `json:"apiGroups"`
	// Resources are plural names or "*".
	Resources []string `json:"resources"`
	// Operations default to List (which implies Get) when omitted.
	Operations []ClusterResourceOperation `json:"operations,omitempty"`
	// Selector picks the objects by label.
	Selector *metav1.LabelSelector `json:"selector"`
}

// GlobalSubject is a User, Group or ServiceAccount.
type GlobalSubject struct {
	Kind v1beta2.OwnerKind `json:"kind"`
	Name string            `json:"name"`
}

// GlobalSubjectSpec is one rule: who, and what they may read.
type GlobalSubjectSpec struct {
	Subjects         []GlobalSubject   `json:"subjects"`
	ClusterResources []ClusterResource `json:"clusterResources,omitempty"`
}

// GlobalProxySettingsSpec holds the rules.
type GlobalProxySettingsSpec struct {
	Rules []GlobalSubjectSpec `json:"rules"`
}

// SettingsStatus is the status of both settings kinds.
type SettingsStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GlobalProxySettings grants subjects read access to labelled cluster-scoped
// objects through the proxy (feature gate ProxyClusterScoped).
type GlobalProxySettings struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GlobalProxySettingsSpec `json:"spec,omitempty"`
	Status SettingsStatus          `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// GlobalProxySettingsList is a list of GlobalProxySettings.
type GlobalProxySettingsList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GlobalProxySettings `json:"items"`
}

// OwnerSpec is one ProxySetting subject: who, and (legacy) which classes.
type OwnerSpec struct {
	Kind            v1beta2.OwnerKind       `json:"kind"`
	Name            string                  `json:"name"`
	ProxyOperations []v1beta2.ProxySettings `json:"proxySettings,omitempty"`
	// ClusterResources (newer capsule-proxy) are decoded so that they can be
	// validated; they never grant more than the tenant itself has.
	ClusterResources []ClusterResource `json:"clusterResources,omitempty"`
}

// ProxySettingSpec holds the subjects.
type ProxySettingSpec struct {
	Subjects []OwnerSpec `json:"subjects"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ProxySetting extends a tenant's proxy grants to other subjects; it lives in
// one of the tenant's namespaces.
type ProxySetting struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ProxySettingSpec `json:"spec,omitempty"`
	Status SettingsStatus   `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ProxySettingList is a list of ProxySettings.
type ProxySettingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProxySetting `json:"items"`
}
