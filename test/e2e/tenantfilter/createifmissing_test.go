package tenantfilter

import (
	"fmt"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCreateIfMissing is the 403→404 table for create-if-missing clients
// (Helm's --create-namespace): a forbidden GET becomes a NotFound naming
// the resource's group and plural only for one named object, not a
// collection, subresource or watch, in a namespace an authoritative lookup
// finds missing, and never in a system namespace.
func TestCreateIfMissing(t *testing.T) {
	wind := createTenant(t, newTenant(uniq("wind"), userOwner("alice")))
	solar := createTenant(t, newTenant(uniq("solar"), userOwner("bob")))
	own := createTenantNamespace(t, wind, uniq("wind-cim"), linkCapsule).Name
	bobs := createTenantNamespace(t, solar, uniq("solar-cim"), linkCapsule).Name
	missing := uniq("helm-target")
	tg := startNSTarget(t, nsOptions{})

	for _, c := range []struct {
		name, method, path string
		code               int
		group, kind, obj   string // for a 404: the details
	}{
		{"named configmap, namespace missing", "GET", "/api/v1/namespaces/" + missing + "/configmaps/cm", 404, "", "configmaps", "cm"},
		{"named deployment, namespace missing", "GET", "/apis/apps/v1/namespaces/" + missing + "/deployments/web", 404, "apps", "deployments", "web"},
		{"named secret, namespace exists (bob's)", "GET", "/api/v1/namespaces/" + bobs + "/secrets/s", 403, "", "", ""},
		{"collection, namespace missing", "GET", "/api/v1/namespaces/" + missing + "/configmaps", 403, "", "", ""},
		{"subresource, namespace missing", "GET", "/api/v1/namespaces/" + missing + "/pods/p/log", 403, "", "", ""},
		{"watch path, namespace missing", "GET", "/api/v1/watch/namespaces/" + missing + "/configmaps/cm", 403, "", "", ""},
		{"watch query, namespace missing", "GET", "/api/v1/namespaces/" + missing + "/configmaps?watch=true", 403, "", "", ""},
		{"not a GET, namespace missing", "DELETE", "/api/v1/namespaces/" + missing + "/configmaps/cm", 403, "", "", ""},
		{"system namespace kube-*", "GET", "/api/v1/namespaces/kube-" + missing + "/configmaps/cm", 403, "", "", ""},
		{"system namespace default", "GET", "/api/v1/namespaces/default/configmaps/cm", 403, "", "", ""},
		{"own namespace: the downstream's own 404", "GET", "/api/v1/namespaces/" + own + "/configmaps/cm", 404, "", "configmaps", "cm"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, body := tg.Do(t, "alice", c.method, c.path, "", nil)
			st := status(t, body)
			if code != c.code || int(st.Code) != c.code {
				t.Fatalf("%s %s: %d %s, want %d", c.method, c.path, code, body, c.code)
			}
			if c.code == http.StatusForbidden && st.Reason != metav1.StatusReasonForbidden {
				t.Fatalf("403 without reason Forbidden: %s", body)
			}
			if c.code != http.StatusNotFound {
				return
			}
			plural := c.kind
			if c.group != "" {
				plural += "." + c.group
			}
			if st.Reason != metav1.StatusReasonNotFound || st.Details == nil || st.Details.Group != c.group ||
				st.Details.Kind != c.kind || st.Details.Name != c.obj || st.Message != fmt.Sprintf("%s %q not found", plural, c.obj) {
				t.Fatalf("404 body: %s", body)
			}
		})
	}
}
