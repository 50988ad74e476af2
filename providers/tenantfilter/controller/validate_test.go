package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	capsulev1beta1 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta1"
	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
	"github.com/wharfhub/wharf/providers/tenantfilter/rules"
)

// testDiscovery is what validation sees of a cluster: a cluster-scoped
// kind with get, a namespaced one, a create-only one and a grouped one.
var testDiscovery = []rules.Resource{
	{Version: "v1", Resource: "nodes", Verbs: []string{"get", "list", "watch"}},
	{Version: "v1", Resource: "pods", Namespaced: true, Verbs: []string{"get", "list"}},
	{Group: "authorization.k8s.io", Version: "v1", Resource: "selfsubjectaccessreviews", Verbs: []string{"create"}},
	{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses", Verbs: []string{"get", "list"}},
}

func TestValidateGlobal(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
	rule := func(groups, resources []string, ops []capsulev1beta1.ClusterResourceOperation, s *metav1.LabelSelector) capsulev1beta1.GlobalProxySettingsSpec {
		return capsulev1beta1.GlobalProxySettingsSpec{Rules: []capsulev1beta1.GlobalSubjectSpec{{
			Subjects:         []capsulev1beta1.GlobalSubject{{Kind: capsulev1beta2.UserOwner, Name: "carol"}},
			ClusterResources: []capsulev1beta1.ClusterResource{{APIGroups: groups, Resources: resources, Operations: ops, Selector: s}},
		}}}
	}
	for _, tc := range []struct {
		name   string
		spec   capsulev1beta1.GlobalProxySettingsSpec
		reason string
	}{
		{"nodes, ops omitted", rule([]string{""}, []string{"nodes"}, nil, sel), ReasonValid},
		{"List and Get", rule([]string{""}, []string{"nodes"}, []capsulev1beta1.ClusterResourceOperation{"List", "Get"}, sel), ReasonValid},
		{"Watch refused", rule([]string{""}, []string{"nodes"}, []capsulev1beta1.ClusterResourceOperation{"Watch"}, sel), ReasonInvalidOperation},
		{"Update refused", rule([]string{""}, []string{"nodes"}, []capsulev1beta1.ClusterResourceOperation{"List", "Update"}, sel), ReasonInvalidOperation},
		{"no get verb", rule([]string{"authorization.k8s.io"}, []string{"selfsubjectaccessreviews"}, nil, sel), ReasonUnsupportedResource},
		{"no get verb through *", rule([]string{"*"}, []string{"selfsubjectaccessreviews"}, nil, sel), ReasonUnsupportedResource},
		{"namespaced", rule([]string{""}, []string{"pods"}, nil, sel), ReasonNamespacedResource},
		{"wildcard resources skip unsuitable kinds", rule([]string{"*"}, []string{"*"}, nil, sel), ReasonValid},
		{"not yet discovered", rule([]string{"example.com"}, []string{"widgets"}, nil, sel), ReasonValid},
		{"missing selector", rule([]string{""}, []string{"nodes"}, nil, nil), ReasonInvalidSelector},
		{"bad selector", rule([]string{""}, []string{"nodes"}, nil, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}), ReasonInvalidSelector},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := validateGlobal(tc.spec, testDiscovery)
			if v.reason != tc.reason || v.ok != (tc.reason == ReasonValid) || v.message == "" {
				t.Fatalf("got %+v, want reason %s", v, tc.reason)
			}
		})
	}
}

func TestValidateProxySetting(t *testing.T) {
	subj := func(ps ...capsulev1beta2.ProxySettings) capsulev1beta1.ProxySettingSpec {
		return capsulev1beta1.ProxySettingSpec{Subjects: []capsulev1beta1.OwnerSpec{{Kind: capsulev1beta2.UserOwner, Name: "dave", ProxyOperations: ps}}}
	}
	for _, tc := range []struct {
		name    string
		spec    capsulev1beta1.ProxySettingSpec
		tenants []string
		ok      bool
		reason  string
	}{
		{"in tenant", subj(capsulev1beta2.ProxySettings{Kind: "Nodes", Operations: []capsulev1beta2.ProxyOperation{"List"}}), []string{"wind"}, true, ReasonValid},
		{"outside tenants", subj(), nil, true, ReasonNotInTenant},
		{"bad kind", subj(capsulev1beta2.ProxySettings{Kind: "Secrets", Operations: []capsulev1beta2.ProxyOperation{"List"}}), []string{"wind"}, false, ReasonInvalidProxySettings},
		{"bad op", subj(capsulev1beta2.ProxySettings{Kind: "Nodes", Operations: []capsulev1beta2.ProxyOperation{"Get"}}), []string{"wind"}, false, ReasonInvalidOperation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := capsulev1beta1.ProxySetting{Spec: tc.spec}
			ps.Namespace = "ns1"
			v := validateProxySetting(rules.ProxySettingFromCapsule(&ps), tc.tenants, testDiscovery)
			if v.ok != tc.ok || v.reason != tc.reason {
				t.Fatalf("got %+v, want ok=%v reason %s", v, tc.ok, tc.reason)
			}
		})
	}
}

func TestNamespaceTenants(t *testing.T) {
	ref := func(apiVersion, kind, name, uid string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: typesUID(uid)}
	}
	for _, tc := range []struct {
		name   string
		ns     corev1.Namespace
		tenant string
		uid    string
		want   bool
	}{
		{"capsule label", corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{capsulev1beta2.TenantLabel: "wind"}}}, "wind", "u1", true},
		{"project label", corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{capsulev1beta2.ProjectTenantLabel: "wind"}}}, "wind", "u1", true},
		{"owner ref", corev1.Namespace{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{ref("capsule.clastix.io/v1beta2", "Tenant", "wind", "u1")}}}, "wind", "u1", true},
		{"owner ref v1beta1", corev1.Namespace{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{ref("capsule.clastix.io/v1beta1", "Tenant", "wind", "u1")}}}, "wind", "u1", true},
		{"stale owner ref", corev1.Namespace{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{ref("capsule.clastix.io/v1beta2", "Tenant", "wind", "old")}}}, "wind", "u1", false},
		{"other group", corev1.Namespace{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{ref("evil.example.com/v1", "Tenant", "wind", "u1")}}}, "wind", "u1", false},
		{"other tenant", corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{capsulev1beta2.TenantLabel: "solar"}}}, "wind", "u1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := belongsTo(&tc.ns, tc.tenant, typesUID(tc.uid)); got != tc.want {
				t.Fatalf("belongsTo = %v, want %v", got, tc.want)
			}
			indexed := false
			for _, n := range namespaceTenants(&tc.ns) {
				indexed = indexed || n == tc.tenant
			}
			if tc.want && !indexed {
				t.Fatal("namespace not indexed under its tenant")
			}
		})
	}
}

func typesUID(s string) types.UID { return types.UID(s) }
