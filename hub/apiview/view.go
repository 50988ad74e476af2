package apiview

import (
	"context"
	"net/url"
	"sync/atomic"

	"github.com/wharfhub/wharf/hub/cluster"
)

// Enablement is what a View asks of the provider catalog
// (hub/enablement through the server's catalog state).
type Enablement interface {
	// Ready reports whether the catalog has loaded; before that no group
	// outside the hub's own is visible.
	Ready() bool
	ProviderOfGroup(group string) (string, bool)
	Enabled(id cluster.ID, provider string) bool
}

// View decides which API groups the workspace of a request sees.
type View struct {
	catalog Enablement
	// always are the groups the hub itself serves in every workspace.
	always map[string]bool
	// aggregated is set once the hub's aggregation exists (SetAggregated).
	aggregated atomic.Pointer[Aggregated]
}

// NewView returns a view over catalog; always lists the groups served in
// every workspace whatever the catalog says.
func NewView(catalog Enablement, always ...string) *View {
	v := &View{catalog: catalog, always: map[string]bool{}}
	for _, g := range always {
		v.always[g] = true
	}
	return v
}

// Visible reports whether group is served in the workspace of ctx: the
// hub's own groups always, a provider's group only where the provider is
// enabled, any other group (a CRD a hub administrator created) everywhere.
// The wildcard /clusters/* (hub administrators) sees everything.
func (v *View) Visible(ctx context.Context, group string) bool {
	if v.always[group] || cluster.IsWildcard(ctx) {
		return true
	}
	if !v.catalog.Ready() {
		return false
	}
	provider, owned := v.catalog.ProviderOfGroup(group)
	if !owned {
		return true
	}
	id, ok := cluster.From(ctx)
	return ok && v.catalog.Enabled(id, provider)
}

// clusterPrefix is the /clusters/<target> prefix the caller addressed the
// workspace with ("" for a request without one, which addresses root), so
// that URLs the hub hands out lead back to the same workspace.
func clusterPrefix(ctx context.Context) string {
	t, ok := cluster.TargetFrom(ctx)
	if !ok || !t.Explicit {
		return ""
	}
	return (&url.URL{Path: "/clusters/" + t.Raw}).EscapedPath()
}
