package enablement

import (
	"fmt"
	"net/http"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/cluster"
)

// Enabler is what WithEnablement asks.
type Enabler interface {
	ProviderOfGroup(group string) (string, bool)
	Enabled(id cluster.ID, provider string) bool
}

// WithEnablement answers 404 for resources of a provider-owned API group in
// a workspace where the provider is not enabled. It must run after
// workspace resolution (the cluster is in the context). Wildcard requests
// pass: only administrators and providers for their own groups get that far
// (authorization and the cluster filters).
//
// explain (may be nil) picks the callers, hub administrators, who also get
// a Warning header naming the provider and the ProviderBinding that would
// enable it: an operator's hint that changes neither code nor body.
func WithEnablement(delegate http.Handler, e Enabler, explain func(user.Info) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		ri, ok := request.RequestInfoFrom(ctx)
		if !ok || !ri.IsResourceRequest || cluster.IsWildcard(ctx) {
			delegate.ServeHTTP(w, r)
			return
		}
		provider, owned := e.ProviderOfGroup(ri.APIGroup)
		if !owned {
			delegate.ServeHTTP(w, r)
			return
		}
		if id, ok := cluster.From(ctx); ok && e.Enabled(id, provider) {
			delegate.ServeHTTP(w, r)
			return
		}
		// Exactly what kube-apiserver answers under a group nobody serves
		// (its handler chain ends in net/http's NotFound): the group is not
		// in this workspace's discovery either (hub/apiview), so a client
		// cannot tell a provider's group from no group at all.
		klog.FromContext(ctx).V(4).Info("Provider group not enabled in this workspace", "group", ri.APIGroup, "provider", provider)
		if u, ok := request.UserFrom(ctx); ok && explain != nil && explain(u) {
			w.Header().Add("Warning", fmt.Sprintf("299 - %q", fmt.Sprintf(
				"%s belongs to provider %q, which is not enabled in this workspace; a ProviderBinding enables it", ri.APIGroup, provider)))
		}
		http.NotFound(w, r)
	})
}
