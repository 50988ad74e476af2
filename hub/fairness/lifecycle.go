package fairness

import (
	"time"

	"k8s.io/apiserver/pkg/endpoints/request"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
)

// workspaceWork is how long a tenant's whole mutating share stays taken
// after one of its Workspace creates or deletes returns: the work the
// request leaves to the hub (the index, the new workspace's namespaces
// and RBAC, the watch cache's events, its controllers' first turns; on
// delete, the first look at its content) is done outside every request,
// and a Workspace create answers in milliseconds. Twenty workers creating
// and deleting workspaces in one tenant took the hub's CPU from the
// others (review 5, #24: another tenant's ConfigMaps 461 -> 40 ops/s).
// Held as upstream holds a write's watch notifications (FinalSeats for
// AdditionalLatency), in the tenant's own queue set only: her Workspace
// creates and deletes go one at a time, at most 1/workspaceWork a second,
// and her other writes wait their turn meanwhile; no other tenant's seats
// are taken. (A held deletion's later looks are paced apart: held.go in
// hub/workspaces.)
const workspaceWork = 100 * time.Millisecond

// workspaceLifecycle reports whether info creates or deletes Workspaces.
func workspaceLifecycle(info *request.RequestInfo) bool {
	if info == nil || !info.IsResourceRequest || info.APIGroup != "tenancy.wharf.dev" || info.Resource != "workspaces" || info.Subresource != "" {
		return false
	}
	switch info.Verb {
	case "create", "delete", "deletecollection":
		return true
	}
	return false
}

// withLifecycle adds to a Workspace create's or delete's width the
// tenant's whole share, held for workspaceWork after it returns.
func withLifecycle(width fcrequest.WorkEstimate, info *request.RequestInfo, share uint64) fcrequest.WorkEstimate {
	if workspaceLifecycle(info) {
		width.FinalSeats = max(share, 1)
		width.AdditionalLatency = workspaceWork
	}
	return width
}

// hubWidth is width as the hub-wide queue sets count it: what a request
// holds after it returns is its tenant's to wait for, not the hub's.
func hubWidth(width fcrequest.WorkEstimate) fcrequest.WorkEstimate {
	width.FinalSeats, width.AdditionalLatency = 0, 0
	return width
}
