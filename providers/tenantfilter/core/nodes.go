package core

import (
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apiserver/pkg/endpoints/request"
)

const nodeLeaseNamespace = "kube-node-lease"

// serveNodeDescribe serves the two extra reads of `kubectl describe node
// <n>` to a caller who may see node n (a class or global grant permits get
// on it), with the provider's credential:
//   - GET api/v1/pods?fieldSelector=spec.nodeName=<n> (kubectl adds
//     status.phase conditions, which only narrow the list), keeping only
//     the pods of namespaces the caller sees;
//   - GET apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/<n>.
//
// Anything else, a watch, or a node the caller may not see returns false
// and is forwarded impersonated.
func (c *Core) serveNodeDescribe(w http.ResponseWriter, r *http.Request, caller Caller, info *request.RequestInfo) bool {
	if !info.IsResourceRequest || info.Subresource != "" {
		return false
	}
	var node string
	pods := false
	switch {
	case info.Verb == "list" && info.APIGroup == "" && info.Resource == "pods" && info.Namespace == "":
		node = nodeNameSelected(r.URL.Query().Get("fieldSelector"))
		pods = true
	case info.Verb == "get" && info.APIGroup == "coordination.k8s.io" && info.Resource == "leases" && info.Namespace == nodeLeaseNamespace:
		node = info.Name
	}
	if node == "" || !c.maySeeNode(r, caller, node) {
		return false
	}
	if pods {
		// The node is shared: only the pods of namespaces the caller
		// sees are listed, never other tenants' pods (their specs carry
		// env values, commands, images).
		mine := map[string]bool{}
		for _, n := range c.visibleNames(c.namespaceView(r.Context(), caller)) {
			mine[n] = true
		}
		c.serveFilteredList(w, r, caller, func(m metav1.ObjectMeta) bool { return mine[m.Namespace] })
		return true
	}
	c.forwardAsProvider(w, r, caller)
	return true
}

// nodeNameSelected returns n when the field selector requires
// spec.nodeName=n (every other requirement only narrows the list).
func nodeNameSelected(raw string) string {
	sel, err := fields.ParseSelector(raw)
	if err != nil {
		return ""
	}
	node := ""
	for _, req := range sel.Requirements() {
		if req.Field != "spec.nodeName" {
			continue
		}
		if req.Operator != selection.Equals && req.Operator != selection.DoubleEquals {
			return ""
		}
		if node != "" && node != req.Value {
			return ""
		}
		node = req.Value
	}
	return node
}

// maySeeNode: the caller's grant on nodes permits get on this node.
func (c *Core) maySeeNode(r *http.Request, caller Caller, name string) bool {
	if c.opts.RequireCapsuleUser && !c.tenancy.IsTenantUser(caller) {
		return false
	}
	ri, ok := c.cache.Resource("", "v1", "nodes")
	if !ok {
		return false
	}
	grant, err := c.grantFor(r, caller, ri)
	if err != nil || !grant.Allows("get") {
		return false
	}
	obj, found, err := c.cachedObject(r, ri, name)
	return err == nil && found && grant.Permits("get", ruleObject(obj))
}
