package aggregation

import (
	"context"
	"net/http"
	"net/url"
	"path"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/sdk"
)

// HubUser is the identity the hub asserts on its own discovery checks.
const HubUser = "system:wharf:hub"

// Proxy is the part of hub/proxy's backend the routing uses.
type Proxy interface {
	ServeAggregated(w http.ResponseWriter, r *http.Request, provider string, id sdk.Identity, originalPath string)
}

// Workspaces resolves a logical cluster to its workspace path, asserted as
// X-Kedge-Tenant.
type Workspaces interface {
	PathOf(ctx context.Context, id cluster.ID) (cluster.Path, error)
}

// WithAggregation routes a workspace's resource requests under
// /apis/<group>/<version> to the provider its APIService names. It must
// run inside authentication, impersonation, authorization and workspace
// resolution (the generic chain), as kube-aggregator's handler runs
// inside kube-apiserver's: a request RBAC denied never gets here. Anything
// else goes to delegate, which in this workspace then never sees the
// group version: the APIService wins over a hub-wide CRD.
func (a *Aggregator) WithAggregation(delegate http.Handler, s runtime.NegotiatedSerializer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		ri, ok := request.RequestInfoFrom(ctx)
		if !ok || !ri.IsResourceRequest || ri.APIPrefix != "apis" || cluster.IsWildcard(ctx) {
			delegate.ServeHTTP(w, r)
			return
		}
		id, ok := cluster.From(ctx)
		if !ok {
			delegate.ServeHTTP(w, r)
			return
		}
		provider, _, ok := a.index.Route(id, ri.APIGroup, ri.APIVersion)
		if !ok {
			delegate.ServeHTTP(w, r)
			return
		}
		gv := schema.GroupVersion{Group: ri.APIGroup, Version: ri.APIVersion}
		if !staysUnder(r.URL.Path, "/apis/"+ri.APIGroup+"/"+ri.APIVersion+"/") {
			// Dot segments: RBAC authorized this group version, so the
			// provider must not be sent anywhere else (the proxy cleans
			// the path it forwards).
			responsewriters.ErrorNegotiated(apierrors.NewNotFound(schema.GroupResource{Group: ri.APIGroup, Resource: ri.Resource}, ri.Name), s, gv, w, r)
			return
		}
		if !a.enabled(id, provider) {
			// kube-aggregator's answer for an APIService whose service is
			// gone: 503, nothing about why.
			responsewriters.ErrorNegotiated(apierrors.NewServiceUnavailable("service unavailable"), s, gv, w, r)
			return
		}
		u, ok := request.UserFrom(ctx)
		if !ok || u.GetName() == "" {
			responsewriters.ErrorNegotiated(apierrors.NewUnauthorized("Unauthorized"), s, gv, w, r)
			return
		}
		path, err := a.workspaces.PathOf(ctx, id)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Resolving the workspace of an aggregated request", "cluster", id)
			responsewriters.ErrorNegotiated(apierrors.NewServiceUnavailable("service unavailable"), s, gv, w, r)
			return
		}
		ident := sdk.Identity{User: u.GetName(), Groups: u.GetGroups(), Tenant: string(path), Cluster: string(id)}
		// The provider does the work: a watch's seats of its tenant's
		// share (hub/fairness) are given back now, as kube-aggregator does,
		// rather than held for as long as the watch stays open.
		utilflowcontrol.RequestDelegated(ctx)
		a.proxy.ServeAggregated(w, r, provider, ident, originalPath(r))
	})
}

// staysUnder reports whether p is clean (no dot segments, no empty
// segments; a trailing slash is kept) and under prefix: what RBAC
// authorized is what the provider gets.
func staysUnder(p, prefix string) bool {
	c := path.Clean(p)
	return (c == p || c+"/" == p) && strings.HasPrefix(c+"/", prefix)
}

// originalPath is the path the client sent: the /clusters/<target> prefix
// (which the cluster filter removed) and the API path.
func originalPath(r *http.Request) string {
	p := r.URL.EscapedPath()
	if t, ok := cluster.TargetFrom(r.Context()); ok && t.Explicit {
		return (&url.URL{Path: "/clusters/" + t.Raw}).EscapedPath() + p
	}
	return p
}
