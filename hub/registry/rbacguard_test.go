package registry

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestOnlyGCFields pins upstream's exemption: only ownerReferences,
// finalizers (and the managedFields/selfLink bookkeeping) may change
// without an escalation check; labels, annotations and rules may not.
func TestOnlyGCFields(t *testing.T) {
	stored := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "r", ResourceVersion: "5", Labels: map[string]string{"a": "b"}},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}},
	}
	change := func(f func(*rbacv1.ClusterRole)) runtime.Object {
		c := stored.DeepCopy()
		f(c)
		return c
	}
	tests := []struct {
		name string
		obj  runtime.Object
		old  runtime.Object
		want bool
	}{
		{"unchanged", change(func(*rbacv1.ClusterRole) {}), stored, true},
		{"TypeMeta set by decoding", change(func(c *rbacv1.ClusterRole) { c.APIVersion, c.Kind = "rbac.authorization.k8s.io/v1", "ClusterRole" }), stored, true},
		{"finalizers", change(func(c *rbacv1.ClusterRole) { c.Finalizers = []string{"x"} }), stored, true},
		{"ownerReferences", change(func(c *rbacv1.ClusterRole) {
			c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "o", UID: "u"}}
		}), stored, true},
		{"managedFields", change(func(c *rbacv1.ClusterRole) { c.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m"}} }), stored, true},
		{"label added", change(func(c *rbacv1.ClusterRole) { c.Labels["rbac.authorization.k8s.io/aggregate-to-view"] = "true" }), stored, false},
		{"label removed", change(func(c *rbacv1.ClusterRole) { c.Labels = nil }), stored, false},
		{"annotation", change(func(c *rbacv1.ClusterRole) { c.Annotations = map[string]string{"a": "b"} }), stored, false},
		{"rules", change(func(c *rbacv1.ClusterRole) { c.Rules[0].Verbs = []string{"*"} }), stored, false},
		{"aggregationRule", change(func(c *rbacv1.ClusterRole) { c.AggregationRule = &rbacv1.AggregationRule{} }), stored, false},
		{"unconditional (no resourceVersion)", change(func(c *rbacv1.ClusterRole) { c.ResourceVersion = "" }), stored, false},
		{"create on update: old is empty", change(func(*rbacv1.ClusterRole) {}), &rbacv1.ClusterRole{}, false},
		{"no old object", change(func(*rbacv1.ClusterRole) {}), (*rbacv1.ClusterRole)(nil), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := onlyGCFields(tc.obj, tc.old); got != tc.want {
				t.Errorf("onlyGCFields = %v, want %v", got, tc.want)
			}
		})
	}
}
