package controller_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	capsulev1beta1 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta1"
	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
	"github.com/wharfhub/wharf/providers/tenantfilter/controller"
)

func typesUID(s string) types.UID { return types.UID(s) }

func testGlobalProxySettingsReady(t *testing.T, e *env) {
	gvr := capsulev1beta1.GlobalProxySettingsGVR
	e.create(gvr, &capsulev1beta1.GlobalProxySettings{
		TypeMeta:   metav1.TypeMeta{APIVersion: "capsule.clastix.io/v1beta1", Kind: "GlobalProxySettings"},
		ObjectMeta: metav1.ObjectMeta{Name: "nodes"},
		Spec: capsulev1beta1.GlobalProxySettingsSpec{Rules: []capsulev1beta1.GlobalSubjectSpec{{
			Subjects: []capsulev1beta1.GlobalSubject{{Kind: "User", Name: "carol"}},
			ClusterResources: []capsulev1beta1.ClusterResource{{APIGroups: []string{""}, Resources: []string{"nodes"},
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "a"}}}},
		}}},
	})
	wantReady(e, gvr, "", "nodes", metav1.ConditionTrue, controller.ReasonValid)

	setOps := func(ops ...any) {
		e.update(gvr, "", "nodes", func(u *unstructured.Unstructured) {
			rules, _, _ := unstructured.NestedSlice(u.Object, "spec", "rules")
			cr := rules[0].(map[string]any)["clusterResources"].([]any)[0].(map[string]any)
			cr["operations"] = ops
			_ = unstructured.SetNestedSlice(u.Object, rules, "spec", "rules")
		})
	}
	setOps("List", "Watch")
	wantReady(e, gvr, "", "nodes", metav1.ConditionFalse, controller.ReasonInvalidOperation)
	setOps("Get")
	wantReady(e, gvr, "", "nodes", metav1.ConditionTrue, controller.ReasonValid)

	// A kind whose discovery has no get verb.
	e.update(gvr, "", "nodes", func(u *unstructured.Unstructured) {
		rules, _, _ := unstructured.NestedSlice(u.Object, "spec", "rules")
		cr := rules[0].(map[string]any)["clusterResources"].([]any)[0].(map[string]any)
		cr["apiGroups"] = []any{"authorization.k8s.io"}
		cr["resources"] = []any{"selfsubjectaccessreviews"}
		_ = unstructured.SetNestedSlice(u.Object, rules, "spec", "rules")
	})
	wantReady(e, gvr, "", "nodes", metav1.ConditionFalse, controller.ReasonUnsupportedResource)
	_, c := readyOf(t, e.get(gvr, "", "nodes", nil))
	if !strings.Contains(c.Message, "selfsubjectaccessreviews") {
		t.Errorf("message %q does not name the resource", c.Message)
	}
}

func testProxySettingReady(t *testing.T, e *env) {
	e.create(capsulev1beta2.TenantsGVR, &capsulev1beta2.Tenant{
		TypeMeta:   metav1.TypeMeta{APIVersion: "capsule.clastix.io/v1beta2", Kind: "Tenant"},
		ObjectMeta: metav1.ObjectMeta{Name: "breeze"},
		Spec:       capsulev1beta2.TenantSpec{Owners: []capsulev1beta2.OwnerSpec{{Kind: "User", Name: "alice"}}},
	})
	e.namespace("loose", nil)
	gvr := capsulev1beta1.ProxySettingsGVR
	e.create(gvr, &capsulev1beta1.ProxySetting{
		TypeMeta:   metav1.TypeMeta{APIVersion: "capsule.clastix.io/v1beta1", Kind: "ProxySetting"},
		ObjectMeta: metav1.ObjectMeta{Name: "share", Namespace: "loose"},
		Spec: capsulev1beta1.ProxySettingSpec{Subjects: []capsulev1beta1.OwnerSpec{{Kind: "User", Name: "dave",
			ProxyOperations: []capsulev1beta2.ProxySettings{{Kind: "Nodes", Operations: []capsulev1beta2.ProxyOperation{"List"}}}}}},
	})
	wantReady(e, gvr, "loose", "share", metav1.ConditionTrue, controller.ReasonNotInTenant)
	_, c := readyOf(t, e.get(gvr, "loose", "share", nil))
	if !strings.Contains(c.Message, "grants nothing") {
		t.Errorf("message %q", c.Message)
	}

	// The namespace joins the tenant: the condition follows without any
	// change to the ProxySetting itself.
	ns, err := e.cs.CoreV1().Namespaces().Get(e.ctx, "loose", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Labels = map[string]string{capsulev1beta2.TenantLabel: "breeze"}
	if _, err := e.cs.CoreV1().Namespaces().Update(e.ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantReady(e, gvr, "loose", "share", metav1.ConditionTrue, controller.ReasonValid)
}
