package server

import (
	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/controller"
	"github.com/wharfhub/wharf/hub/fairness"
	"github.com/wharfhub/wharf/hub/workspaces"
)

// clusterTenants charges the background work of a logical cluster to its
// tenant as hub/fairness defines it (TreeOf its path), read from the
// index's memory: the fair queues call it under their lock. A cluster the
// index does not know (yet, or any more) is a tenant of its own, so it
// neither joins nor delays anybody else's turn.
func clusterTenants(ix *workspaces.Index) controller.TenantOfCluster {
	return func(id cluster.ID) string {
		if info, ok := ix.Cached(string(id)); ok && info.Path != "" {
			return "tree:" + string(fairness.TreeOf(info.Path))
		}
		return "cluster:" + string(id)
	}
}
