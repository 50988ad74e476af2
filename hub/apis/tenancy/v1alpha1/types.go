package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkspacePhase is the lifecycle phase of a Workspace.
type WorkspacePhase string

const (
	// WorkspacePhaseInitializing means the logical cluster is allocated and
	// the Workspace stored, and the hub is creating what every workspace
	// starts with (namespaces, the creator's admin binding). kcp calls the
	// phase before it Scheduling; here allocation is part of the create
	// request, so no stored Workspace is ever in it.
	WorkspacePhaseInitializing WorkspacePhase = "Initializing"
	// WorkspacePhaseReady means the logical cluster is allocated and serving.
	WorkspacePhaseReady WorkspacePhase = "Ready"
	// WorkspacePhaseTerminating means the workspace is being deleted: its
	// objects and those of its descendants are being removed from storage.
	WorkspacePhaseTerminating WorkspacePhase = "Terminating"
)

// WorkspaceCleanupFinalizer holds a deleted Workspace until every key of its
// logical cluster, and of all descendant workspaces, is gone from etcd.
const WorkspaceCleanupFinalizer = "tenancy.wharf.dev/cleanup"

// Condition types of a Workspace.
const (
	// WorkspaceReady is True once the workspace is initialized and serving,
	// and False while it initializes or terminates. `kubectl wait
	// --for=condition=Ready workspace/<name>` waits for it, as on kcp.
	WorkspaceReady = "Ready"
	// WorkspaceContentDeleted is set while a Workspace is terminating: False
	// with the objects and finalizers that remain while its content is
	// being deleted through the API, and reason ContentForced once the
	// deletion grace period passed and the remains are purged.
	WorkspaceContentDeleted = "ContentDeleted"
)

// Condition reasons of a Workspace.
const (
	WorkspaceReasonInitializing         = "Initializing"
	WorkspaceReasonInitialized          = "Initialized"
	WorkspaceReasonTerminating          = "Terminating"
	WorkspaceReasonSomeResourcesRemain  = "SomeResourcesRemain"
	WorkspaceReasonSomeFinalizersRemain = "SomeFinalizersRemain"
	WorkspaceReasonContentForced        = "ContentForced"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Workspace is a child workspace: an isolated Kubernetes API served at
// /clusters/<path>.
type Workspace struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WorkspaceSpec   `json:"spec,omitempty"`
	Status WorkspaceStatus `json:"status,omitempty"`
}

// WorkspaceSpec is the desired state of a Workspace. It is empty for now;
// it exists so that later fields (type, initializers) have a home.
type WorkspaceSpec struct{}

// WorkspaceStatus is the observed state of a Workspace.
type WorkspaceStatus struct {
	// Phase is Initializing, Ready or Terminating.
	// +optional
	Phase WorkspacePhase `json:"phase,omitempty"`
	// Cluster is the logical cluster id: 16 lowercase base36 characters,
	// stable for the life of the workspace.
	// +optional
	Cluster string `json:"cluster,omitempty"`
	// Path is the full workspace path, for example root:acme:team-a.
	// +optional
	Path string `json:"path,omitempty"`
	// URL is the base URL of this workspace's Kubernetes API.
	// +optional
	URL string `json:"URL,omitempty"`
	// Conditions are Ready and, while terminating, ContentDeleted. Only the
	// hub writes them.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// WorkspaceList is a list of Workspaces.
type WorkspaceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Workspace `json:"items"`
}
