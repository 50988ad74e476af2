package server

import (
	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/objsize"
	"github.com/wharfhub/wharf/hub/workspaces"
)

// objectSizes is the table of big stored objects' sizes (hub/objsize):
// learned by the storage decorator, read by the flow control to weigh a
// request naming one (issue 24, third review C-B). Workspaces are
// resolved from the index's memory only: the flow control's Prepare has
// read the request's workspace into it before seats are taken.
func objectSizes(ix *workspaces.Index) *objsize.Table {
	return objsize.NewTable(func(raw string) (cluster.ID, cluster.Path, bool) {
		info, ok := ix.Cached(raw)
		return info.ID, info.Path, ok
	})
}
