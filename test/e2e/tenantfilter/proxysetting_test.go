package tenantfilter

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	capsulev1beta1 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta1"
	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
)

// TestProxySetting: a ProxySetting in a tenant namespace extends the
// tenant's class grants to other subjects, never beyond what the tenant's
// owners hold, and a writer cannot use one to grant themselves more.
func TestProxySetting(t *testing.T) {
	pool := uniq("ps")
	mine, other := pool+"-mine", pool+"-other"
	createNode(t, mine, map[string]string{"pool": mine})
	createNode(t, other, map[string]string{"pool": other})
	tnt := newTenant(uniq("ps-t"), userOwner("rules-owner-ps", kindOps(capsulev1beta2.NodesProxy, capsulev1beta2.ListOperation)))
	tnt.Spec.NodeSelector = map[string]string{"pool": mine}
	tnt = createTenant(t, tnt)
	ns := uniq("ps-ns")
	createTenantNamespace(t, tnt, ns, linkCapsule)
	plain := uniq("ps-plain")
	createNamespace(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: plain}})

	subject := func(user string, ops ...capsulev1beta2.ProxyOperation) capsulev1beta1.OwnerSpec {
		return capsulev1beta1.OwnerSpec{Kind: capsulev1beta2.UserOwner, Name: user,
			ProxyOperations: []capsulev1beta2.ProxySettings{kindOps(capsulev1beta2.NodesProxy, ops...)}}
	}
	// The admin extends the tenant to rules-viewer, asking for more than
	// the owners have (Delete); and, outside any tenant, to rules-g6.
	createProxySetting(t, ns, uniq("ps-viewer"), subject("rules-viewer", capsulev1beta2.ListOperation, capsulev1beta2.DeleteOperation))
	createProxySetting(t, plain, uniq("ps-plain"), subject("rules-g6", capsulev1beta2.ListOperation))

	p := startGrantsTarget(t, grantsOptions{})
	listNodes := func(user string) (int, string) { return p.Do(t, user, http.MethodGet, "/api/v1/nodes", "", nil) }

	t.Run("extends the tenant to another subject", func(t *testing.T) {
		eventually(t, time.Minute, func() error {
			code, body := listNodes("rules-viewer")
			if code != http.StatusOK {
				return fmt.Errorf("list: %d %s", code, body)
			}
			if got := only(listNames(t, body), pool); fmt.Sprint(got) != fmt.Sprint([]string{mine}) {
				return fmt.Errorf("list = %v", got)
			}
			return nil
		})
		code, body := p.Do(t, "rules-viewer", http.MethodGet, "/api/v1/nodes/"+other, "", nil)
		expectCode(t, "get outside the tenant's nodes", code, body, http.StatusNotFound)
	})

	t.Run("never beyond the tenant's operations", func(t *testing.T) {
		code, body := p.Do(t, "rules-viewer", http.MethodDelete, "/api/v1/nodes/"+mine+"?dryRun=All", "", nil)
		expectCode(t, "delete the owners were not granted", code, body, http.StatusForbidden)
	})

	t.Run("ignored outside a tenant namespace", func(t *testing.T) {
		// Give the cache time to see the object, then check it grants nothing.
		eventually(t, time.Minute, func() error {
			code, body := p.Do(t, "rules-viewer", http.MethodGet, "/api/v1/nodes/"+mine, "", nil)
			if code != http.StatusOK {
				return fmt.Errorf("warm-up: %d %s", code, body)
			}
			return nil
		})
		code, body := listNodes("rules-g6")
		expectCode(t, "a ProxySetting in a plain namespace", code, body, http.StatusForbidden)
	})

	t.Run("no self-grant", func(t *testing.T) {
		// The owner is admin of its namespace, so it may write a
		// ProxySetting there (through the filter, with its own RBAC).
		ps := &capsulev1beta1.ProxySetting{
			TypeMeta:   metav1.TypeMeta{APIVersion: capsulev1beta1.SchemeGroupVersion.String(), Kind: "ProxySetting"},
			ObjectMeta: metav1.ObjectMeta{Name: uniq("ps-self"), Namespace: ns},
			Spec: capsulev1beta1.ProxySettingSpec{Subjects: []capsulev1beta1.OwnerSpec{
				subject("rules-owner-ps", capsulev1beta2.ListOperation, capsulev1beta2.UpdateOperation, capsulev1beta2.DeleteOperation),
				subject("rules-g6", capsulev1beta2.UpdateOperation),
				// A legitimate grant in the same object shows when the
				// cache has it.
				subject("rules-g5", capsulev1beta2.ListOperation),
			}},
		}
		body, _ := json.Marshal(ps)
		code, out := p.Do(t, "rules-owner-ps", http.MethodPost, "/apis/capsule.clastix.io/v1beta1/namespaces/"+ns+"/proxysettings", string(body), nil)
		expectCode(t, "owner writes a ProxySetting", code, out, http.StatusCreated)
		eventually(t, time.Minute, func() error {
			if code, out := listNodes("rules-g5"); code != http.StatusOK {
				return fmt.Errorf("the ProxySetting is not in force yet: %d %s", code, out)
			}
			return nil
		})
		patch := http.Header{"Content-Type": {"application/merge-patch+json"}}
		code, out = p.Do(t, "rules-owner-ps", http.MethodPatch, "/api/v1/nodes/"+mine, `{"metadata":{"labels":{"self":"granted"}}}`, patch)
		expectCode(t, "owner patches with a self-granted Update", code, out, http.StatusForbidden)
		code, out = p.Do(t, "rules-owner-ps", http.MethodDelete, "/api/v1/nodes/"+mine+"?dryRun=All", "", nil)
		expectCode(t, "owner deletes with a self-granted Delete", code, out, http.StatusForbidden)
		code, out = p.Do(t, "rules-g6", http.MethodGet, "/api/v1/nodes/"+mine, "", nil)
		expectCode(t, "Update handed to another subject", code, out, http.StatusForbidden)
		code, out = listNodes("rules-owner-ps")
		expectCode(t, "owner list", code, out, http.StatusOK)
	})
}
