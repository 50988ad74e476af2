package rules

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Subject kinds, as Capsule spells them.
const (
	KindUser           = "User"
	KindGroup          = "Group"
	KindServiceAccount = "ServiceAccount"
)

// Legacy (class) kinds of Tenant.spec.owners[].proxySettings[] and
// ProxySetting.spec.subjects[].proxySettings[].
const (
	Nodes             = "Nodes"
	StorageClasses    = "StorageClasses"
	IngressClasses    = "IngressClasses"
	PriorityClasses   = "PriorityClasses"
	RuntimeClasses    = "RuntimeClasses"
	PersistentVolumes = "PersistentVolumes"
)

// Operations of legacy grants (List, Update, Delete) and of global rules
// (List, Get).
const (
	OpList   = "List"
	OpGet    = "Get"
	OpUpdate = "Update"
	OpDelete = "Delete"
)

// Snapshot is everything the engine reads, taken from the core's caches.
// The engine never modifies it.
type Snapshot struct {
	Tenants       []Tenant
	Global        []GlobalProxySettings
	ProxySettings []ProxySetting
	// Namespaces maps a tenant name to its namespaces. TenantNamespaces
	// and NamespaceTenant, when set, are used instead (the core answers
	// them from its namespace index).
	Namespaces       map[string][]string
	TenantNamespaces func(tenant string) []string
	NamespaceTenant  func(ns string) (string, bool)
	// Discovered is every resource the downstream serves (namespaced ones
	// included), from the core's discovery cache. The engine validates
	// each settings object against it exactly as the status controller
	// does, so an object the controller reports Ready=False grants
	// nothing. Nil (discovery never read) leaves only the static checks.
	Discovered []Resource
}

// Subject names a User, Group or ServiceAccount. A ServiceAccount is named
// as its username, system:serviceaccount:<namespace>:<name>, as in Capsule.
type Subject struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// KindGrant is one legacy proxySettings entry: a class kind and operations.
type KindGrant struct {
	Kind       string   `json:"kind"`
	Operations []string `json:"operations,omitempty"`
}

// Owner is a tenant owner (or a ProxySetting subject) with its class grants.
type Owner struct {
	Subject
	ProxySettings []KindGrant `json:"proxySettings,omitempty"`
	// ClusterResources (a ProxySetting subject's, newer capsule-proxy)
	// never grant; they are kept so that an invalid one voids the
	// ProxySetting here as it makes the object Ready=False.
	ClusterResources []ClusterResource `json:"clusterResources,omitempty"`
}

// AllowedList is Capsule's allowed-class list: names (allowed), a default,
// a regexp on names (allowedRegex) and a label selector.
type AllowedList struct {
	Default      string   `json:"default,omitempty"`
	Allowed      []string `json:"allowed,omitempty"`
	AllowedRegex string   `json:"allowedRegex,omitempty"`
	metav1.LabelSelector
}

// Tenant holds the parts of a Capsule Tenant (v1beta2) the engine uses.
type Tenant struct {
	Name            string
	Owners          []Owner
	NodeSelector    map[string]string
	StorageClasses  *AllowedList
	IngressClasses  *AllowedList // spec.ingressOptions.allowedClasses
	PriorityClasses *AllowedList
	RuntimeClasses  *AllowedList
}

// GlobalProxySettings is a cluster-scoped settings object.
type GlobalProxySettings struct {
	Name  string
	Rules []GlobalRule
}

// GlobalRule is one spec.rules[] entry.
type GlobalRule struct {
	Subjects         []Subject         `json:"subjects,omitempty"`
	ClusterResources []ClusterResource `json:"clusterResources,omitempty"`
}

// ClusterResource is one clusterResources[] entry.
type ClusterResource struct {
	APIGroups  []string `json:"apiGroups,omitempty"`
	Resources  []string `json:"resources,omitempty"`
	Operations []string `json:"operations,omitempty"`
	// Selector is required: a nil selector makes the entry invalid (it
	// grants nothing); an empty one selects every object.
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// ProxySetting is a namespaced settings object.
type ProxySetting struct {
	Namespace string
	Name      string
	Subjects  []Owner
}

// Identity is the caller as the engine sees it.
type Identity struct {
	User   string
	Groups []string
	// TenantUser: the core recognised the caller as a tenant identity
	// (CapsuleConfiguration users, or a ServiceAccount owning a tenant).
	TenantUser bool
}

// Config carries the options the engine depends on.
type Config struct {
	// ProxyClusterScoped is the feature gate enabling GlobalProxySettings.
	ProxyClusterScoped bool
	// RequireCapsuleUser is --require-capsule-user: when true, only tenant
	// users get any grant.
	RequireCapsuleUser bool
}

// Resource is the requested resource, as discovery describes it.
type Resource struct {
	Group      string
	Version    string
	Resource   string
	Namespaced bool
	// Verbs are discovery's verbs for the resource.
	Verbs []string
}

// Object is what a predicate looks at: the object's name and labels, and for
// a PersistentVolume the namespace of its spec.claimRef.
type Object struct {
	Name           string
	Labels         map[string]string
	ClaimNamespace string
}
