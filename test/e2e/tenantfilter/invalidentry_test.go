package tenantfilter

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	capsulev1beta1 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta1"
	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
	"github.com/wharfhub/wharf/providers/tenantfilter/rules"
)

// TestGlobalProxySettingsInvalidEntryGrantsNothing: a GlobalProxySettings
// whose entries name a namespaced kind (secrets) next to a valid nodes
// entry is Ready=False (NamespacedResource), and the filter grants nothing
// from it: not the nodes entry, and above all no cross-namespace read of
// secrets with the provider's own credential. A control object, valid,
// shows the filter has loaded the settings (so the denials are not just a
// cold cache).
func TestGlobalProxySettingsInvalidEntryGrantsNothing(t *testing.T) {
	pool := uniq("inv")
	node := pool + "-n"
	createNode(t, node, map[string]string{"pool": pool})
	secretNS := uniq("inv-secrets")
	createNamespace(t, nsObj(secretNS))
	const secretValue = "do-not-leak-this-value"
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: secretNS, Labels: map[string]string{"pool": pool}},
		StringData: map[string]string{"v": secretValue}}
	if _, err := adminClientset().CoreV1().Secrets(secretNS).Create(testCtx(t), sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	leaked := base64.StdEncoding.EncodeToString([]byte(secretValue)) // how a Secret's data is served
	victim, control := freshUser(t), freshUser(t)
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"pool": pool}}
	invalid := uniq("gp-invalid")
	createGlobalProxySettings(t, invalid, capsulev1beta1.GlobalSubjectSpec{
		Subjects: []capsulev1beta1.GlobalSubject{{Kind: capsulev1beta2.UserOwner, Name: victim}},
		ClusterResources: []capsulev1beta1.ClusterResource{
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Selector: &metav1.LabelSelector{}},
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Selector: sel},
		},
	})
	createGlobalProxySettings(t, uniq("gp-control"), globalRule(control, []string{""}, []string{"nodes"}, nil, map[string]string{"pool": pool}))

	p := startGrantsTarget(t, grantsOptions{ClusterScoped: true})
	c := waitReady(t, capsulev1beta1.GlobalProxySettingsGVR, "", invalid, metav1.ConditionFalse, rules.ReasonNamespacedResource)
	if !strings.Contains(c.Message, "rules[0].clusterResources[0]") || !strings.Contains(c.Message, "secrets") {
		t.Fatalf("Ready message does not name the secrets entry: %q", c.Message)
	}
	// The control user sees the node: the filter has both objects.
	eventually(t, time.Minute, func() error {
		code, body := p.Do(t, control, http.MethodGet, "/api/v1/nodes", "", nil)
		if code != http.StatusOK {
			return fmt.Errorf("control list: %d %s", code, body)
		}
		if got := only(listNames(t, body), pool); len(got) != 1 || got[0] != node {
			return fmt.Errorf("control list = %v", got)
		}
		return nil
	})

	tests := []struct {
		name string
		path string
	}{
		{"list nodes", "/api/v1/nodes"},
		{"get the node", "/api/v1/nodes/" + node},
		{"list secrets across namespaces", "/api/v1/secrets"},
		{"list secrets of the namespace", "/api/v1/namespaces/" + secretNS + "/secrets"},
		{"get the secret", "/api/v1/namespaces/" + secretNS + "/secrets/s"},
		{"list secrets by label", "/api/v1/secrets?labelSelector=pool%3D" + pool},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Nothing is granted, so the request goes downstream as the
			// user, whose RBAC allows none of it.
			code, body := p.Do(t, victim, http.MethodGet, tt.path, "", nil)
			if strings.Contains(body, leaked) {
				t.Fatalf("secret leaked: %d %s", code, body)
			}
			expectCode(t, tt.name, code, body, http.StatusForbidden)
			if st := status(t, body); st.Reason != metav1.StatusReasonForbidden {
				t.Fatalf("403 is not a Forbidden Status: %+v", st)
			}
		})
	}
	t.Run("kubectl get secrets -A", func(t *testing.T) {
		out, err := p.Kubectl(t, victim, "get", "secrets", "-A", "-o", "name")
		if err == nil || strings.Contains(out, "secret/s") {
			t.Fatalf("kubectl get secrets -A: err=%v %s", err, out)
		}
	})
}

// TestProxySettingInvalidEntryGrantsNothing: a ProxySetting in a tenant
// namespace whose subject lists a secrets clusterResources entry next to a
// valid Nodes class grant is Ready=False (NamespacedResource) and hands out
// nothing; a valid twin for another user shows the filter has loaded both.
func TestProxySettingInvalidEntryGrantsNothing(t *testing.T) {
	pool := uniq("psinv")
	createNode(t, pool, map[string]string{"pool": pool})
	tnt := newTenant(uniq("psinv-t"), userOwner(freshUser(t), kindOps(capsulev1beta2.NodesProxy, capsulev1beta2.ListOperation)))
	tnt.Spec.NodeSelector = map[string]string{"pool": pool}
	tnt = createTenant(t, tnt)
	ns := uniq("psinv-ns")
	createTenantNamespace(t, tnt, ns, linkCapsule)

	victim, control := freshUser(t), freshUser(t)
	nodes := []capsulev1beta2.ProxySettings{kindOps(capsulev1beta2.NodesProxy, capsulev1beta2.ListOperation)}
	invalid := uniq("ps-invalid")
	createProxySetting(t, ns, invalid, capsulev1beta1.OwnerSpec{Kind: capsulev1beta2.UserOwner, Name: victim, ProxyOperations: nodes,
		ClusterResources: []capsulev1beta1.ClusterResource{{APIGroups: []string{""}, Resources: []string{"secrets"}, Selector: &metav1.LabelSelector{}}}})
	createProxySetting(t, ns, uniq("ps-control"), capsulev1beta1.OwnerSpec{Kind: capsulev1beta2.UserOwner, Name: control, ProxyOperations: nodes})

	p := startGrantsTarget(t, grantsOptions{ClusterScoped: true})
	c := waitReady(t, capsulev1beta1.ProxySettingsGVR, ns, invalid, metav1.ConditionFalse, rules.ReasonNamespacedResource)
	if !strings.Contains(c.Message, "subjects[0].clusterResources[0]") {
		t.Fatalf("Ready message does not name the entry: %q", c.Message)
	}
	eventually(t, time.Minute, func() error {
		code, body := p.Do(t, control, http.MethodGet, "/api/v1/nodes", "", nil)
		if code != http.StatusOK {
			return fmt.Errorf("control list: %d %s", code, body)
		}
		if got := only(listNames(t, body), pool); len(got) != 1 {
			return fmt.Errorf("control list = %v", got)
		}
		return nil
	})
	for _, path := range []string{"/api/v1/nodes", "/api/v1/nodes/" + pool, "/api/v1/secrets", "/api/v1/namespaces/" + ns + "/secrets"} {
		code, body := p.Do(t, victim, http.MethodGet, path, "", nil)
		expectCode(t, path, code, body, http.StatusForbidden)
	}
}
