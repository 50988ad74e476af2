package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// DefaultCapsuleConfigurationName is the configuration the filter reads
// unless --capsule-configuration-name says otherwise.
const DefaultCapsuleConfigurationName = "default"

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// CapsuleConfiguration is Capsule's cluster-scoped configuration object.
type CapsuleConfiguration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CapsuleConfigurationSpec   `json:"spec,omitempty"`
	Status CapsuleConfigurationStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// CapsuleConfigurationList is a list of CapsuleConfigurations.
type CapsuleConfigurationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CapsuleConfiguration `json:"items"`
}

// UserSpec names one Capsule user: a User, Group or ServiceAccount.
type UserSpec struct {
	Kind OwnerKind `json:"kind"`
	Name string    `json:"name"`
}

// CapsuleConfigurationSpec is the part of Capsule's configuration the filter
// reads, plus the rest verbatim.
type CapsuleConfigurationSpec struct {
	// Users are the identities Capsule treats as tenant users.
	Users []UserSpec `json:"users,omitempty"`
	// UserNames and UserGroups are Capsule's older (deprecated) way of
	// saying the same; the status merges all three.
	UserNames  []string `json:"userNames,omitempty"`
	UserGroups []string `json:"userGroups,omitempty"`

	IgnoreUserWithGroups           []string              `json:"ignoreUserWithGroups,omitempty"`
	AllowServiceAccountPromotion   bool                  `json:"allowServiceAccountPromotion,omitempty"`
	ForceTenantPrefix              bool                  `json:"forceTenantPrefix,omitempty"`
	ProtectedNamespaceRegexpString string                `json:"protectedNamespaceRegex,omitempty"`
	Administrators                 []UserSpec            `json:"administrators,omitempty"`
	EnableTLSReconciler            *bool                 `json:"enableTLSReconciler,omitempty"`
	CapsuleResources               *runtime.RawExtension `json:"overrides,omitempty"`
	NodeMetadata                   *runtime.RawExtension `json:"nodeMetadata,omitempty"`
	Admission                      *runtime.RawExtension `json:"admission,omitempty"`
	RBAC                           *runtime.RawExtension `json:"rbac,omitempty"`
	CacheInvalidation              *metav1.Duration      `json:"cacheInvalidation,omitempty"`
}

// CapsuleConfigurationStatus is what Capsule (or our status controller)
// derives from the spec. The filter reads Users.
type CapsuleConfigurationStatus struct {
	// Users is spec.users merged with spec.userNames (as Users) and
	// spec.userGroups (as Groups), deduplicated and sorted.
	Users              []UserSpec         `json:"users,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	Tenants            []string           `json:"tenants,omitempty"`
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
}
