package catalog

import (
	"testing"

	edgesv1 "github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/providers/edges/protocol"
	"github.com/wharfhub/wharf/providers/resourceproxy"
)

// TestMayOwn is the reservation table: which provider may own which
// group. Nobody may own the hub's or Kubernetes' groups; a shipped
// provider's group is that provider's alone; any other qualified group,
// *.wharf.dev included, is free.
func TestMayOwn(t *testing.T) {
	for _, tc := range []struct {
		provider, group string
		reserved, ok    bool
	}{
		// The hub's own groups and its etcd prefix.
		{"edges", "tenancy.wharf.dev", true, false},
		{"example", "providers.wharf.dev", true, false},
		{"example", "wharf.dev", true, false},
		// Kubernetes' groups, the core group and unqualified names.
		{"example", "", true, false},
		{"example", "core", true, false},
		{"example", "apps", true, false},
		{"example", "k8s.io", true, false},
		{"example", "rbac.authorization.k8s.io", true, false},
		{"example", "apiextensions.k8s.io", true, false},
		{"example", "metrics.kubernetes.io", true, false},
		{"example", "kubernetes.io", true, false},
		// Shipped providers' groups: theirs, nobody else's.
		{"edges", "edges.wharf.dev", false, true},
		{"resource-proxy", "proxy.wharf.dev", false, true},
		{"example", "edges.wharf.dev", false, false},
		{"resource-proxy", "edges.wharf.dev", false, false},
		{"edges", "proxy.wharf.dev", false, false},
		{"", "proxy.wharf.dev", false, false},
		// Free groups.
		{"hello", "hello.wharf.dev", false, true},
		{"example", "example.wharf.dev", false, true},
		{"edges", "example.com", false, true},
		{"probe", "probe.example.com", false, true},
		// Look-alikes are other groups, not the reserved ones.
		{"example", "edges.wharf.dev.example.com", false, true},
		{"example", "k8s.io.example.com", false, true},
		{"example", "notk8s.io", false, true},
	} {
		t.Run(tc.provider+"/"+tc.group, func(t *testing.T) {
			if got := ReservedGroup(tc.group); got != tc.reserved {
				t.Errorf("ReservedGroup(%q) = %v, want %v", tc.group, got, tc.reserved)
			}
			if got := MayOwn(tc.provider, tc.group); got != tc.ok {
				t.Errorf("MayOwn(%q, %q) = %v, want %v", tc.provider, tc.group, got, tc.ok)
			}
		})
	}
}

// TestShippedGroupsMatchProviders: the reservation names the groups and
// provider names the shipped providers really use, and nothing else.
func TestShippedGroupsMatchProviders(t *testing.T) {
	want := map[string]string{edgesv1.GroupName: protocol.ProviderName, resourceproxy.Group: resourceproxy.ProviderName}
	if len(shippedGroups) != len(want) {
		t.Errorf("shippedGroups = %v, want %v", shippedGroups, want)
	}
	for g, p := range want {
		if got, ok := ShippedGroup(g); !ok || got != p {
			t.Errorf("ShippedGroup(%q) = %q, %v; want %q", g, got, ok, p)
		}
	}
}
