package enablement

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"

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
func WithEnablement(delegate http.Handler, e Enabler, s runtime.NegotiatedSerializer) http.Handler {
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
		gr := schema.GroupResource{Group: ri.APIGroup, Resource: ri.Resource}
		// Still a plain NotFound for clients, with a message that tells a
		// person what to do about it.
		notFound := apierrors.NewNotFound(gr, ri.Name)
		notFound.ErrStatus.Message = fmt.Sprintf("%s is not enabled in this workspace: it belongs to provider %q; a ProviderBinding enables it", gr, provider)
		responsewriters.ErrorNegotiated(notFound, s, schema.GroupVersion{Group: ri.APIGroup, Version: ri.APIVersion}, w, r)
	})
}
