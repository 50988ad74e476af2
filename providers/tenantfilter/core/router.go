package core

import (
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/request"

	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
)

func groupResource(group, resource string) schema.GroupResource {
	return schema.GroupResource{Group: group, Resource: resource}
}

// route dispatches one request. The order matters:
//  1. ignored callers are forwarded unfiltered, with their own identity;
//  2. --allowed-paths are forwarded without inspection (impersonated: they
//     still need an authenticated caller, which ServeHTTP checked);
//  3. the namespace core (namespaces, Tenant objects) for filtered callers;
//  4. the grants engine (access reviews, describe node, cluster-scoped
//     kinds), which decides itself whom it serves (GlobalProxySettings also
//     apply to non-tenant callers with --require-capsule-user=false);
//  5. reflected and ProxyAllNamespaced cluster-wide lists;
//  6. everything else is forwarded impersonated.
//
// A handler that wrote a response (an answer or an error) returns true and
// nothing else is sent downstream for this request.
func (c *Core) route(w http.ResponseWriter, r *http.Request, caller Caller) {
	if c.tenancy.Ignored(caller) {
		c.forward(w, r, caller)
		return
	}
	if c.allowedPath(r.URL.Path) {
		c.forward(w, r, caller)
		return
	}
	info, err := c.info.NewRequestInfo(r)
	if err != nil {
		writeStatus(w, r, apierrors.NewBadRequest("cannot parse the request path"))
		return
	}
	r = r.WithContext(request.WithRequestInfo(r.Context(), info))
	filtered := c.filtered(caller)
	if info.IsResourceRequest && filtered {
		switch {
		case info.APIGroup == "" && info.Resource == "namespaces":
			if c.serveNamespaces(w, r, caller, info) {
				return
			}
		case info.APIGroup == capsulev1beta2.GroupName && info.Resource == capsulev1beta2.ResourceTenants:
			if c.serveTenants(w, r, caller, info) {
				return
			}
		}
	}
	for _, h := range []routeHandler{c.serveAccessReview, c.serveNodeDescribe, c.serveClusterScoped} {
		if h(w, r, caller, info) {
			return
		}
	}
	if info.IsResourceRequest && filtered && c.serveClusterWideList(w, r, caller, info) {
		return
	}
	c.forward(w, r, caller)
}

// filtered: the provider's grants apply to the caller. With
// --require-capsule-user (the default) that is a tenant user of an existing
// CapsuleConfiguration; without it, every authenticated caller.
func (c *Core) filtered(caller Caller) bool {
	if !c.opts.RequireCapsuleUser {
		return true
	}
	return c.tenancy.IsTenantUser(caller)
}

// allowedPath matches --allowed-paths exactly (a trailing slash aside):
// they are discovery documents, and a prefix match on /api would let
// everything through uninspected.
func (c *Core) allowedPath(p string) bool {
	if p != "/" {
		p = strings.TrimSuffix(p, "/")
	}
	for _, a := range c.opts.AllowedPaths {
		if a != "/" {
			a = strings.TrimSuffix(a, "/")
		}
		if a == p {
			return true
		}
	}
	return false
}
