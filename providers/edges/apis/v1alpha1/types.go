// Package v1alpha1 is the edges.wharf.dev/v1alpha1 API: the Edge kind, a
// cluster or server behind NAT that reaches the hub through an agent
// (wharf-agent). The CRD itself is providers/edges/crd.yaml; these Go types
// mirror it for the provider, the agent and the CLI.
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	GroupName = "edges.wharf.dev"
	Version   = "v1alpha1"
	Resource  = "edges"
	Kind      = "Edge"
)

// SchemeGroupVersion is edges.wharf.dev/v1alpha1.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: Version}

// GVR is the edges resource.
var GVR = SchemeGroupVersion.WithResource(Resource)

// EdgeType says what the agent forwards tunnel connections to.
type EdgeType string

const (
	// TypeKubernetes: a cluster behind NAT; tunnel connections carry HTTP to
	// the edge cluster's API server.
	TypeKubernetes EdgeType = "kubernetes"
	// TypeServer: a machine with sshd; tunnel connections carry raw TCP to it.
	TypeServer EdgeType = "server"
)

// Phase is the edge's coarse state.
type Phase string

const (
	PhasePending      Phase = "Pending" // never connected
	PhaseReady        Phase = "Ready"
	PhaseDisconnected Phase = "Disconnected"
)

// Condition types.
const (
	ConditionRegistered = "Registered" // an agent has joined (holds a credential)
	ConditionConnected  = "Connected"  // a tunnel is up now
)

// Edge is cluster-scoped inside a workspace.
type Edge struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              EdgeSpec   `json:"spec"`
	Status            EdgeStatus `json:"status,omitempty"`
}

// EdgeSpec is what the user asks for.
type EdgeSpec struct {
	Type   EdgeType    `json:"type"`
	Server *ServerSpec `json:"server,omitempty"` // servers only
}

// ServerSpec configures a server edge.
type ServerSpec struct {
	// SSHPort is the sshd port on the edge machine (default 22); the agent
	// uses its --ssh-addr unless this is set explicitly.
	SSHPort int32 `json:"sshPort,omitempty"`
}

// EdgeStatus is written by the edges provider only.
type EdgeStatus struct {
	Phase              Phase              `json:"phase,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	URL                string             `json:"URL,omitempty"`
	AgentVersion       string             `json:"agentVersion,omitempty"`
	Hostname           string             `json:"hostname,omitempty"`
	LastHeartbeatTime  *metav1.Time       `json:"lastHeartbeatTime,omitempty"`
	SSHHostKey         string             `json:"sshHostKey,omitempty"` // authorized_keys form
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
}

// EdgeList is a list of Edges.
type EdgeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Edge `json:"items"`
}
