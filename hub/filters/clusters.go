package filters

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/workspaces"
)

// Resolver is the part of the workspace index the filters need.
type Resolver interface {
	// Cached resolves from memory only.
	Cached(raw string) (workspaces.Info, bool)
	// Resolve resolves from memory, falling back to a quorum read.
	Resolve(ctx context.Context, raw string) (workspaces.Info, error)
}

const clustersPrefix = "/clusters/"

// WithClusterPath strips the /clusters/<target> prefix and records the
// target, resolving it from memory when it can. See the package doc for why
// this filter must not do more.
func WithClusterPath(delegate http.Handler, resolver Resolver, s runtime.NegotiatedSerializer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := cluster.Target{Raw: string(cluster.RootPath)}
		if rest, ok := strings.CutPrefix(r.URL.Path, clustersPrefix); ok {
			raw, remainder, _ := strings.Cut(rest, "/")
			if raw == "" {
				responsewriters.ErrorNegotiated(apierrors.NewNotFound(schema.GroupResource{Group: "tenancy.wharf.dev", Resource: "workspaces"}, ""), s, schema.GroupVersion{}, w, r)
				return
			}
			target = cluster.Target{Raw: raw, Explicit: true}
			r = stripPrefix(r, clustersPrefix+raw, "/"+remainder)
		}
		ctx := cluster.WithTarget(r.Context(), target)
		if !target.IsWildcard() {
			if info, ok := resolver.Cached(target.Raw); ok {
				ctx = cluster.WithCluster(ctx, info.ID)
			}
		}
		delegate.ServeHTTP(w, r.WithContext(ctx))
	})
}

// stripPrefix returns a shallow copy of r whose path no longer carries the
// /clusters/<target> prefix.
func stripPrefix(r *http.Request, prefix, newPath string) *http.Request {
	r2 := new(http.Request)
	*r2 = *r
	u := *r.URL
	u.Path = newPath
	if u.RawPath != "" {
		u.RawPath = "/" + strings.TrimPrefix(strings.TrimPrefix(u.RawPath, prefix), "/")
	}
	r2.URL = &u
	r2.RequestURI = u.RequestURI()
	return r2
}

// WildcardVerbs are the only verbs a /clusters/* request may use.
var WildcardVerbs = sets.New("list", "watch")

// WithClusterResolution completes resolution after authentication. It is
// wrapped directly around the API handler, innermost in the chain.
func WithClusterResolution(delegate http.Handler, resolver Resolver, isAdmin func(user.Info) bool, s runtime.NegotiatedSerializer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		target, ok := cluster.TargetFrom(ctx)
		if !ok {
			responsewriters.InternalError(w, r, errors.New("request reached the API without a cluster target"))
			return
		}
		if target.IsWildcard() {
			if err := admitWildcard(ctx, isAdmin); err != nil {
				responsewriters.ErrorNegotiated(err, s, schema.GroupVersion{}, w, r)
				return
			}
			delegate.ServeHTTP(w, r.WithContext(cluster.WithWildcard(ctx)))
			return
		}
		info, err := resolver.Resolve(ctx, target.Raw)
		if errors.Is(err, workspaces.ErrNotFound) {
			responsewriters.ErrorNegotiated(apierrors.NewNotFound(schema.GroupResource{Group: "tenancy.wharf.dev", Resource: "workspaces"}, target.Raw), s, schema.GroupVersion{}, w, r)
			return
		}
		if err != nil {
			responsewriters.ErrorNegotiated(apierrors.NewServiceUnavailable(fmt.Sprintf("resolving workspace: %v", err)), s, schema.GroupVersion{}, w, r)
			return
		}
		if info.Terminating {
			if ri, ok := request.RequestInfoFrom(ctx); ok && ri.IsResourceRequest && ri.Verb == "create" {
				responsewriters.ErrorNegotiated(apierrors.NewForbidden(schema.GroupResource{Group: ri.APIGroup, Resource: ri.Resource}, "",
					fmt.Errorf("workspace %s is being deleted", info.Path)), s, schema.GroupVersion{}, w, r)
				return
			}
		}
		delegate.ServeHTTP(w, r.WithContext(cluster.WithCluster(ctx, info.ID)))
	})
}

// admitWildcard allows list and watch of a whole resource across every
// workspace, and only to privileged users.
func admitWildcard(ctx context.Context, isAdmin func(user.Info) bool) error {
	u, ok := request.UserFrom(ctx)
	if !ok || !isAdmin(u) {
		name := ""
		if ok {
			name = u.GetName()
		}
		return apierrors.NewForbidden(schema.GroupResource{}, "", fmt.Errorf("user %q may not access all workspaces at once", name))
	}
	ri, ok := request.RequestInfoFrom(ctx)
	if !ok || !ri.IsResourceRequest {
		// Discovery and OpenAPI are identical in every workspace.
		return nil
	}
	if !WildcardVerbs.Has(ri.Verb) {
		return apierrors.NewBadRequest(fmt.Sprintf("/clusters/* supports only list and watch, not %s", ri.Verb))
	}
	if ri.Namespace != "" {
		return apierrors.NewBadRequest("/clusters/* supports only requests across all namespaces")
	}
	return nil
}
