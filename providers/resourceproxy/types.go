package resourceproxy

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/wharfhub/wharf/sdk"
)

// API names of the provider.
const (
	ProviderName = "resource-proxy"
	Group        = "proxy.wharf.dev"
	Version      = "v1alpha1"
	Resource     = "resourceproxies"
	Kind         = "ResourceProxy"

	// ProvidersNamespace is the spec.service namespace naming a provider.
	ProvidersNamespace = "wharf-providers"
	// ProtectedLabel marks APIServices whose deletion the hub refuses to
	// anyone but this provider.
	ProtectedLabel = "wharf.dev/protected"

	// Owner labels written on proxied objects.
	OwnerClusterLabel   = "proxy.wharf.dev/owner-cluster"
	OwnerWorkspaceLabel = "proxy.wharf.dev/owner-workspace"

	// WorkspaceUserPrefix is the identity the proxy presents on a target:
	// wharf:workspace:<client workspace path>.
	WorkspaceUserPrefix = "wharf:workspace:"

	// HeaderOriginalPath is set by the hub's aggregation route only.
	HeaderOriginalPath = sdk.HeaderOriginalPath

	// ClusterAnnotation is the hub's logical cluster annotation.
	ClusterAnnotation = "wharf.dev/cluster"
)

// GVR of ResourceProxy.
var GVR = schema.GroupVersionResource{Group: Group, Version: Version, Resource: Resource}

// AccessMode is owned (default) or all.
type AccessMode string

const (
	AccessOwned AccessMode = "owned"
	AccessAll   AccessMode = "all"
)

// ResourceProxy is the Go form of the CRD, decoded from unstructured.
type ResourceProxy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              Spec   `json:"spec"`
	Status            Status `json:"status,omitempty"`
}

// Spec names the target, the resources and the access mode.
type Spec struct {
	Target     Target     `json:"target"`
	Resources  []Entry    `json:"resources"`
	AccessMode AccessMode `json:"accessMode,omitempty"`
}

// Target is exactly one of Workspace or External.
type Target struct {
	// Workspace is a workspace path (or logical cluster id) on this hub.
	Workspace string `json:"workspace,omitempty"`
	// External is a cluster reached through a kubeconfig Secret in the
	// client workspace.
	External *External `json:"external,omitempty"`
}

// External names a kubeconfig Secret of the client workspace.
type External struct {
	// Name is the cluster's name in metrics and messages; default
	// <namespace>/<secret name>.
	Name      string    `json:"name,omitempty"`
	SecretRef SecretRef `json:"secretRef"`
}

// SecretRef is a key of a Secret in the client workspace.
type SecretRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Key defaults to "kubeconfig".
	Key string `json:"key,omitempty"`
}

// Entry is one resource of a group and version, or "*" for all of them.
type Entry struct {
	Group    string `json:"group"`
	Version  string `json:"version"`
	Resource string `json:"resource"`
}

// Status reports whether the proxy works and why not.
type Status struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	APIServices        []string           `json:"apiServices,omitempty"`
}

// GroupVersion is "<group>/<version>".
func (e Entry) GroupVersion() string { return e.Group + "/" + e.Version }

// Mode is the access mode with its default.
func (s Spec) Mode() AccessMode {
	if s.AccessMode == "" {
		return AccessOwned
	}
	return s.AccessMode
}

// Name is the target's name in metrics, logs and the 503 message.
func (t Target) Name() string {
	if t.External != nil {
		if t.External.Name != "" {
			return t.External.Name
		}
		return t.External.SecretRef.Namespace + "/" + t.External.SecretRef.Name
	}
	return t.Workspace
}

// Key identifies the target's connection settings (not its credentials).
func (t Target) Key() string {
	if t.External != nil {
		r := t.External.SecretRef
		return "external|" + r.Namespace + "/" + r.Name + "/" + r.key() + "|" + t.Name()
	}
	return "workspace|" + t.Workspace
}

func (r SecretRef) key() string {
	if r.Key == "" {
		return "kubeconfig"
	}
	return r.Key
}

// FromUnstructured decodes a ResourceProxy.
func FromUnstructured(u *unstructured.Unstructured) (*ResourceProxy, error) {
	rp := &ResourceProxy{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, rp); err != nil {
		return nil, fmt.Errorf("decode resourceproxy %s: %w", u.GetName(), err)
	}
	return rp, nil
}
