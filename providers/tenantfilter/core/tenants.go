package core

import (
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/endpoints/request"

	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
)

// serveTenants lets tenant owners read their own Tenant objects (with the
// provider's credential) and nobody else: a named read of another tenant
// is a 404 exactly like a missing one, and lists omit other tenants.
// Mutations go to the downstream impersonated.
func (c *Core) serveTenants(w http.ResponseWriter, r *http.Request, caller Caller, info *request.RequestInfo) bool {
	owned := map[string]bool{}
	for _, t := range c.ownedTenants(caller) {
		owned[t] = true
	}
	keep := func(m metav1.ObjectMeta) bool { return owned[m.Name] }
	switch info.Verb {
	case "get":
		if !owned[info.Name] {
			writeStatus(w, r, apierrors.NewNotFound(capsulev1beta2.Resource(capsulev1beta2.ResourceTenants), info.Name))
			return true
		}
		c.forwardAsProvider(w, r, caller)
		return true
	case "list":
		c.serveFilteredList(w, r, caller, keep)
		return true
	case "watch":
		c.serveFilteredWatch(w, r, caller, keep)
		return true
	}
	return false
}
