package registry

import (
	"context"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestKubeValidationWired checks that each kind's strategy runs kube's
// rules (hub/registry/validation) on create and on update, with kube's
// message: the e2e fidelity table compares the same against a real
// kube-apiserver.
func TestKubeValidationWired(t *testing.T) {
	ctx := context.Background()
	md := func(fins ...string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: "x", Namespace: "default", ResourceVersion: "1", Finalizers: fins}
	}
	yes := true
	frozen := &corev1.ConfigMap{ObjectMeta: md(), Immutable: &yes, Data: map[string]string{"a": "1"}}
	zero := int32(0)
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}
	for _, c := range []struct {
		name     string
		gr       schema.GroupResource
		obj, old runtime.Object // old nil: a create
		want     string
	}{
		{"configmap immutable", corev1.Resource("configmaps"), &corev1.ConfigMap{ObjectMeta: md(), Immutable: &yes, Data: map[string]string{"a": "2"}}, frozen,
			"data: Forbidden: field is immutable when `immutable` is set"},
		{"secret tls", corev1.Resource("secrets"), &corev1.Secret{ObjectMeta: md(), Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": nil}}, nil,
			"data[tls.key]: Required value"},
		{"role no verbs", rbacv1.Resource("roles"), &rbacv1.Role{ObjectMeta: md(), Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}}}}, nil,
			"rules[0].verbs: Required value"},
		{"rolebinding kind", rbacv1.Resource("rolebindings"), &rbacv1.RoleBinding{ObjectMeta: md(), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Pod", Name: "p"}}, nil,
			`roleRef.kind: Unsupported value: "Pod": supported values: "Role", "ClusterRole"`},
		{"clusterrolebinding sa", rbacv1.Resource("clusterrolebindings"), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "x"}, RoleRef: ref,
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "s"}}}, nil, "subjects[0].namespace: Required value"},
		{"lease duration", coordinationv1.Resource("leases"), &coordinationv1.Lease{ObjectMeta: md(), Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: &zero}}, nil,
			"spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"},
		{"serviceaccount finalizer", corev1.Resource("serviceaccounts"), &corev1.ServiceAccount{ObjectMeta: md("foo")}, nil,
			`metadata.finalizers[0]: Invalid value: "foo": name is neither a standard finalizer name nor is it fully qualified`},
		{"configmap finalizer update", corev1.Resource("configmaps"), &corev1.ConfigMap{ObjectMeta: md("foo")}, &corev1.ConfigMap{ObjectMeta: md()},
			`metadata.finalizers[0]: Invalid value: "foo": name is neither a standard finalizer name nor is it fully qualified`},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := strategyFor(t, c.gr)
			errs := s.Validate(ctx, c.obj)
			if c.old != nil {
				errs = s.ValidateUpdate(ctx, c.obj, c.old)
			}
			got := ""
			if len(errs) > 0 {
				got = errs.ToAggregate().Error()
			}
			if got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}
