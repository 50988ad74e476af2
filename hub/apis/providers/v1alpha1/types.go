package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of a CatalogEntry.
const (
	// ConditionReady: the provider serves requests on some hub replica.
	ConditionReady = "Ready"
	// ConditionRunning: some hub replica runs the provider's process.
	ConditionRunning = "Running"
	// ConditionDegraded: some hub replica reports it down or failed.
	ConditionDegraded = "Degraded"
)

// Condition types of a ProviderBinding.
const (
	// ConditionBound: the provider exists and the hub has set up its access
	// (RBAC grants) in the binding's workspace.
	ConditionBound = "Bound"
)

// BindingCleanupFinalizer holds a deleted ProviderBinding until the hub has
// removed the grants and custom resources it enabled in the workspace.
const BindingCleanupFinalizer = "providers.wharf.dev/cleanup"

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// CatalogEntry is one provider plugin loaded by the hub. It lives in the
// root workspace and is named after the provider.
type CatalogEntry struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CatalogEntrySpec   `json:"spec,omitempty"`
	Status CatalogEntryStatus `json:"status,omitempty"`
}

// CatalogEntrySpec mirrors the provider's manifest.
type CatalogEntrySpec struct {
	// +optional
	DisplayName string `json:"displayName,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	Description string `json:"description,omitempty"`
	// Icon is a path below the provider's UI.
	// +optional
	Icon string `json:"icon,omitempty"`
	// +optional
	Category string `json:"category,omitempty"`
	// Replicas is Any (every hub replica runs it) or Single (one does).
	// +optional
	Replicas string `json:"replicas,omitempty"`
	// EdgeProxyAccess: enabling the provider grants its identity the proxy
	// verb on edges in the enabling workspace.
	// +optional
	EdgeProxyAccess bool `json:"edgeProxyAccess,omitempty"`
	// PublicPaths are backend prefixes reached without authentication.
	// +optional
	// +listType=atomic
	PublicPaths []string `json:"publicPaths,omitempty"`
	// APIs are the CustomResourceDefinitions the provider owns.
	// +optional
	// +listType=atomic
	APIs []OwnedAPI `json:"apis,omitempty"`
}

// OwnedAPI is one CustomResourceDefinition of a provider.
type OwnedAPI struct {
	// Name is the CRD's name, <plural>.<group>.
	Name string `json:"name"`
	// Group is the API group it serves.
	Group string `json:"group"`
	// Resource is the plural resource name.
	// +optional
	Resource string `json:"resource,omitempty"`
}

// CatalogEntryStatus is the provider's observed state across hub replicas.
type CatalogEntryStatus struct {
	// Conditions are Ready, Running and Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// RestartCount sums the restarts reported by every hub replica.
	// +optional
	RestartCount int32 `json:"restartCount,omitempty"`
	// LastError is the latest reason the provider went down or failed.
	// +optional
	LastError string `json:"lastError,omitempty"`
	// Version is the version of the running provider.
	// +optional
	Version string `json:"version,omitempty"`
	// Endpoints are where the hub serves the provider.
	// +optional
	Endpoints CatalogEndpoints `json:"endpoints,omitempty"`
	// HubReplica is the hub replica running the provider (the first one,
	// by name, when several do).
	// +optional
	HubReplica string `json:"hubReplica,omitempty"`
	// Replicas holds one element per hub replica reporting on the
	// provider. Each replica writes only its own element; elements whose
	// heartbeat is stale are dropped.
	// +optional
	// +listType=map
	// +listMapKey=name
	Replicas []ReplicaStatus `json:"replicas,omitempty"`
}

// CatalogEndpoints are the provider's routes on the hub.
type CatalogEndpoints struct {
	// UI is /ui/providers/<name>/.
	// +optional
	UI string `json:"ui,omitempty"`
	// Backend is /services/providers/<name>/.
	// +optional
	Backend string `json:"backend,omitempty"`
}

// ReplicaStatus is one hub replica's view of a provider.
type ReplicaStatus struct {
	// Name is the hub replica's name.
	Name string `json:"name"`
	// State is the supervisor's state: Starting, Running, Restarting,
	// Failed or Stopped.
	// +optional
	State string `json:"state,omitempty"`
	// Restarts counts relaunches on this replica.
	// +optional
	Restarts int32 `json:"restarts,omitempty"`
	// LastError is the latest reason it went down on this replica.
	// +optional
	LastError string `json:"lastError,omitempty"`
	// Pid is the plugin's process id on this replica's host, 0 if none.
	// +optional
	Pid int32 `json:"pid,omitempty"`
	// LastTransitionTime is when State last changed on this replica.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// NextRetryTime is when this replica launches the provider again,
	// while it waits out its restart backoff (State Restarting). The
	// backend proxy tells callers to retry after it (503, Retry-After).
	// +optional
	NextRetryTime *metav1.Time `json:"nextRetryTime,omitempty"`
	// HeartbeatTime is when this replica last wrote this element.
	// +optional
	HeartbeatTime metav1.Time `json:"heartbeatTime,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// CatalogEntryList is a list of CatalogEntries.
type CatalogEntryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []CatalogEntry `json:"items"`
}

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ProviderBinding enables a provider in the workspace it is created in.
type ProviderBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ProviderBindingSpec   `json:"spec,omitempty"`
	Status ProviderBindingStatus `json:"status,omitempty"`
}

// ProviderBindingSpec names the provider to enable.
type ProviderBindingSpec struct {
	// Provider is the name of a CatalogEntry in root. Immutable.
	Provider string `json:"provider"`
}

// ProviderBindingStatus is the observed state of a binding.
type ProviderBindingStatus struct {
	// Conditions are Bound and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ProviderBindingList is a list of ProviderBindings.
type ProviderBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []ProviderBinding `json:"items"`
}
