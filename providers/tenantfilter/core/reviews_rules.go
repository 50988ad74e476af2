package core

import (
	"encoding/json"
	"net/http"
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"

	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
)

// reviewAllows decides an SSAR for what the provider itself serves:
//   - list and watch of namespaces, for every authenticated caller (the
//     answer is a filtered list, possibly empty);
//   - a cluster-wide list or watch of a namespaced resource, for a tenant
//     user whom ProxyAllNamespaced or a reflecting RoleBinding gives such a
//     list;
//   - a cluster-scoped kind for the grant's verbs (for a named object, only
//     if the grant permits that object). Global rules never give watch or
//     mutations; class grants give update/patch/delete only with Update or
//     Delete.
//
// A false answer means "ask the downstream", never "denied".
func (c *Core) reviewAllows(r *http.Request, caller Caller, a *authorizationv1.ResourceAttributes) bool {
	if a == nil || a.Subresource != "" {
		return false
	}
	listing := a.Verb == "list" || a.Verb == "watch"
	if a.Group == "" && a.Resource == "namespaces" {
		return listing && a.Name == ""
	}
	version := a.Version
	if version == "*" {
		version = ""
	}
	ri, ok := c.cache.Resource(a.Group, version, a.Resource)
	if !ok {
		return false
	}
	if ri.Namespaced {
		return listing && a.Namespace == "" && a.Name == "" && c.clusterWideListServed(caller, a.Group, a.Resource)
	}
	if a.Group == capsulev1beta2.GroupName && a.Resource == capsulev1beta2.ResourceTenants {
		return false // the namespace core's, and the downstream's RBAC for the rest
	}
	if c.opts.RequireCapsuleUser && !c.tenancy.IsTenantUser(caller) {
		return false
	}
	grant, err := c.grantFor(r, caller, ri)
	if err != nil || !grant.Allows(a.Verb) {
		return false
	}
	if a.Name == "" {
		return true
	}
	obj, found, err := c.cachedObject(r, ri, a.Name)
	return err == nil && found && grant.Permits(a.Verb, ruleObject(obj))
}

// clusterWideListServed mirrors serveClusterWideList: the router serves
// such a list for a filtered caller when ProxyAllNamespaced gives it its
// tenants' namespaces, or a labelled RoleBinding reflects the list.
func (c *Core) clusterWideListServed(caller Caller, group, resource string) bool {
	if !c.filtered(caller) {
		return false
	}
	if c.opts.Gate(GateProxyAllNamespaced) {
		for _, t := range c.tenancy.OwnedTenants(caller) {
			if len(c.tenancy.TenantNamespaces(t)) > 0 {
				return true
			}
		}
	}
	for _, rb := range c.bindingsFor(caller) {
		if rb.Labels[ReflectionLabel] == "true" && c.roleAllowsList(rb, group, resource) {
			return true
		}
	}
	return false
}

// serveRulesReview sends the SSRR to the downstream impersonated, keeps its
// rules, and appends the provider's: namespaces list/watch for everyone,
// and each granted cluster-scoped kind with the grant's verbs.
func (c *Core) serveRulesReview(w http.ResponseWriter, r *http.Request, caller Caller, _ *authorizationv1.SelfSubjectRulesReview) {
	out := r.Clone(r.Context())
	out.Body, out.ContentLength = r.Body, r.ContentLength
	out.Header.Set("Accept", "application/json")
	out.Header.Del("Accept-Encoding")
	rec := newCapture()
	c.forward(rec, out, caller)
	var review authorizationv1.SelfSubjectRulesReview
	if rec.code != http.StatusCreated || json.Unmarshal(rec.body.Bytes(), &review) != nil || review.Kind != "SelfSubjectRulesReview" {
		rec.replay(w)
		return
	}
	review.Status.ResourceRules = append(review.Status.ResourceRules, c.providerRules(r, caller)...)
	writeReview(w, r, &review)
}

// providerRules lists the provider's grants as resource rules.
func (c *Core) providerRules(r *http.Request, caller Caller) []authorizationv1.ResourceRule {
	out := []authorizationv1.ResourceRule{{Verbs: []string{"list", "watch"}, APIGroups: []string{""}, Resources: []string{"namespaces"}}}
	if c.opts.RequireCapsuleUser && !c.tenancy.IsTenantUser(caller) {
		return out
	}
	snap, err := c.grantsSnapshot(r.Context())
	if err != nil {
		return out
	}
	cfg, id := c.grantsConfig(), c.grantsIdentity(caller)
	kinds := c.cache.ClusterScoped()
	slices.SortFunc(kinds, func(a, b ResourceInfo) int {
		if a.GVR.Group != b.GVR.Group {
			if a.GVR.Group < b.GVR.Group {
				return -1
			}
			return 1
		}
		if a.GVR.Resource < b.GVR.Resource {
			return -1
		}
		if a.GVR.Resource > b.GVR.Resource {
			return 1
		}
		return 0
	})
	for _, ri := range kinds {
		if (ri.GVR.Group == "" && ri.GVR.Resource == "namespaces") || (ri.GVR.Group == capsulev1beta2.GroupName && ri.GVR.Resource == capsulev1beta2.ResourceTenants) {
			continue
		}
		if verbs := snap.Evaluate(cfg, id, resourceRules(ri)).Verbs(); len(verbs) > 0 {
			out = append(out, authorizationv1.ResourceRule{Verbs: verbs, APIGroups: []string{ri.GVR.Group}, Resources: []string{ri.GVR.Resource}})
		}
	}
	return out
}
