package catalog

import "strings"

// hubGroups are the hub's own: it serves tenancy.wharf.dev and
// providers.wharf.dev itself. "wharf.dev" is no API group, but custom
// resources are stored under <prefix>/<group>/<plural>/ and the hub keeps
// its own records (workspace index, shared secrets, sessions, replicas)
// under <prefix>/wharf.dev/: a CRD in that group would own those keys.
var hubGroups = map[string]bool{"tenancy.wharf.dev": true, "providers.wharf.dev": true, "wharf.dev": true}

// shippedGroups are the API groups of the providers that ship with the
// hub, each with the one provider name that may own it. The hub itself
// gives them meaning (the edge-proxy grant of a ProviderBinding is the
// proxy verb on edges.wharf.dev/edges; kubectl and `wharf edge` read
// Edges there), so they stay reserved on a hub that does not load those
// providers: another provider claiming edges.wharf.dev would be handed
// every "proxy edges" permission a workspace grants. Other *.wharf.dev
// groups stay free for provider authors (the SDK's examples use
// hello.wharf.dev and example.wharf.dev). The strings are the providers'
// own constants; TestShippedGroupsMatchProviders keeps them in step.
var shippedGroups = map[string]string{
	"edges.wharf.dev": "edges",          // providers/edges: Edge
	"proxy.wharf.dev": "resource-proxy", // providers/resourceproxy: ResourceProxy
}

// ReservedGroup reports whether no provider may own group: the hub's own
// groups, the core group and every unqualified name, and the groups
// Kubernetes keeps for itself (k8s.io, kubernetes.io and their subdomains,
// which hold RBAC,
// coordination, the reviews and apiextensions). Claiming one would let a
// catalog entry switch a built-in API off behind a ProviderBinding, so the
// catalog refuses such entries and the enablement index ignores the claim.
func ReservedGroup(group string) bool {
	return hubGroups[group] || !strings.Contains(group, ".") ||
		group == "k8s.io" || strings.HasSuffix(group, ".k8s.io") ||
		group == "kubernetes.io" || strings.HasSuffix(group, ".kubernetes.io")
}

// ShippedGroup reports whether group belongs to a provider that ships
// with the hub, and which.
func ShippedGroup(group string) (provider string, ok bool) {
	provider, ok = shippedGroups[group]
	return provider, ok
}

// MayOwn reports whether the provider named provider may own group: no
// reserved group, and a shipped provider's group only for that provider.
// It is the one rule for manifests' CRDs, CatalogEntry writes and the
// enablement index's claims.
func MayOwn(provider, group string) bool {
	if ReservedGroup(group) {
		return false
	}
	owner, shipped := shippedGroups[group]
	return !shipped || owner == provider
}
