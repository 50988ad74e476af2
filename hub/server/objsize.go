package server

import (
	"context"

	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/objsize"
	"github.com/wharfhub/wharf/hub/workspaces"
)

// objectSizes is the table of big stored objects' sizes (hub/objsize):
// learned by the storage decorator, read by the flow control to weigh a
// request naming one (issue 24, third review C-B). Workspaces are
// resolved from the index's memory only: the flow control's Prepare has
// read the request's workspace into it before seats are taken. authz
// returns the hub's authorizer once it is built: a caller of another
// tenant is weighed only when it allows her request (hub/objsize's doc).
func objectSizes(ix *workspaces.Index, authz func() authorizer.Authorizer) *objsize.Table {
	resolve := func(raw string) (cluster.ID, cluster.Path, bool) {
		info, ok := ix.Cached(raw)
		return info.ID, info.Path, ok
	}
	may := func(ctx context.Context, id cluster.ID, info *request.RequestInfo) bool {
		az := authz()
		u, ok := request.UserFrom(ctx)
		if az == nil || !ok || u == nil {
			return false
		}
		d, _, err := az.Authorize(cluster.WithCluster(ctx, id), authorizer.AttributesRecord{
			User: u, Verb: info.Verb, Namespace: info.Namespace, APIGroup: info.APIGroup, APIVersion: info.APIVersion,
			Resource: info.Resource, Subresource: info.Subresource, Name: info.Name, ResourceRequest: true, Path: info.Path,
		})
		return err == nil && d == authorizer.DecisionAllow
	}
	return objsize.NewTable(resolve, may)
}
