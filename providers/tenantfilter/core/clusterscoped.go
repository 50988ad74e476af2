package core

import (
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"

	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
	"github.com/wharfhub/wharf/providers/tenantfilter/rules"
)

// serveClusterScoped answers requests on cluster-scoped kinds that the
// provider grants (GlobalProxySettings, tenant owners' class grants,
// ProxySettings):
//   - list: the informer's objects filtered by the grant (a Table is fetched
//     with the provider's credential and its rows filtered the same way);
//   - get: the cached object when the grant permits it, else NotFound;
//   - update, patch, delete (dry-run included): forwarded with the
//     provider's credential once the cached object is within an Update or
//     Delete grant, else NotFound.
//
// Everything else (watch, create, subresources, kinds or verbs no grant
// covers) returns false and is forwarded impersonated, so the downstream's
// RBAC decides.
func (c *Core) serveClusterScoped(w http.ResponseWriter, r *http.Request, caller Caller, info *request.RequestInfo) bool {
	if !info.IsResourceRequest || info.Namespace != "" || info.Subresource != "" {
		return false
	}
	// Namespaces and Tenants are the namespace core's.
	if info.APIGroup == "" && info.Resource == "namespaces" {
		return false
	}
	if info.APIGroup == capsulev1beta2.GroupName && info.Resource == capsulev1beta2.ResourceTenants {
		return false
	}
	// Only a tenant user (or anyone, with --require-capsule-user=false)
	// can hold a grant; everyone else keeps the downstream's RBAC, without
	// the cost of evaluating rules.
	if c.opts.RequireCapsuleUser && !c.tenancy.IsTenantUser(caller) {
		return false
	}
	ri, ok := c.cache.Resource(info.APIGroup, info.APIVersion, info.Resource)
	if !ok || ri.Namespaced {
		return false
	}
	grant, err := c.grantFor(r, caller, ri)
	if err != nil {
		// The grants cannot be computed (Tenant cache unreadable): fail
		// closed rather than fall through to an impersonated forward
		// whose answer could differ from the filtered one.
		klog.V(1).InfoS("tenant filter: grants unavailable", "user", caller.User, "err", err)
		writeStatus(w, r, apierrors.NewServiceUnavailable("the tenant filter's caches are not ready"))
		return true
	}
	if grant.Empty() {
		return false
	}
	switch info.Verb {
	case "list":
		filter, ok, err := grant.ListFilter()
		if !ok {
			return false
		}
		if errors.Is(err, rules.ErrCannotCombine) {
			writeStatus(w, r, apierrors.NewBadRequest(err.Error()))
			return true
		}
		if err != nil {
			writeStatus(w, r, err)
			return true
		}
		c.serveGrantedList(w, r, caller, info, ri, filter)
		return true
	case "get", "update", "patch", "delete":
		if !grant.Allows(info.Verb) {
			return false
		}
		obj, found, err := c.cachedObject(r, ri, info.Name)
		if err != nil {
			writeStatus(w, r, apierrors.NewServiceUnavailable("the tenant filter's caches are not ready"))
			return true
		}
		if !found || !grant.Permits(info.Verb, ruleObject(obj)) {
			// Outside the grant the object does not exist for the
			// caller: kube-apiserver's own NotFound, so a denial and
			// a missing object look alike.
			writeStatus(w, r, apierrors.NewNotFound(groupResource(info.APIGroup, info.Resource), info.Name))
			return true
		}
		if info.Verb == "get" && !wantsTable(r) {
			writeObject(w, r, obj)
			return true
		}
		c.forwardAsProvider(w, r, caller)
		return true
	}
	return false
}

// grantFor evaluates the caller's grant on one discovered resource.
func (c *Core) grantFor(r *http.Request, caller Caller, ri ResourceInfo) (rules.Grant, error) {
	snap, err := c.grantsSnapshot(r.Context())
	if err != nil {
		return rules.Grant{}, err
	}
	return snap.Evaluate(c.grantsConfig(), c.grantsIdentity(caller), resourceRules(ri)), nil
}

func resourceRules(ri ResourceInfo) rules.Resource {
	return rules.Resource{Group: ri.GVR.Group, Version: ri.GVR.Version, Resource: ri.GVR.Resource, Namespaced: ri.Namespaced, Verbs: ri.Verbs}
}

// cachedObject reads one object from the resource's informer.
func (c *Core) cachedObject(r *http.Request, ri ResourceInfo, name string) (*unstructured.Unstructured, bool, error) {
	l, err := c.cache.Lister(r.Context(), ri.GVR)
	if err != nil {
		return nil, false, err
	}
	o, err := l.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	u, ok := asUnstructured(o)
	return u, ok, nil
}

func asUnstructured(o runtime.Object) (*unstructured.Unstructured, bool) {
	if u, ok := o.(*unstructured.Unstructured); ok {
		return u, true
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, false
	}
	return &unstructured.Unstructured{Object: m}, true
}

// ruleObject is what the engine's predicates look at.
func ruleObject(u *unstructured.Unstructured) rules.Object {
	o := rules.Object{Name: u.GetName(), Labels: u.GetLabels()}
	// Only PersistentVolumes have a claimRef, and only the PV class grant
	// looks at it.
	o.ClaimNamespace, _, _ = unstructured.NestedString(u.Object, "spec", "claimRef", "namespace")
	return o
}
