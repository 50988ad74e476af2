package registry

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/wharfhub/wharf/hub/apis/scheme"
)

func strategyFor(t *testing.T, gr schema.GroupResource) strategy {
	t.Helper()
	for _, kinds := range BuiltinKinds() {
		for _, k := range kinds {
			if k.Resource == gr {
				return strategy{ObjectTyper: scheme.New(), NameGenerator: names.SimpleNameGenerator, kind: k}
			}
		}
	}
	t.Fatalf("no kind %s", gr)
	return strategy{}
}

func TestValidation(t *testing.T) {
	ns := metav1.ObjectMeta{Name: "x", Namespace: "default"}
	tests := []struct {
		name    string
		gr      schema.GroupResource
		obj     runtime.Object
		wantErr bool
	}{
		{"configmap ok", corev1.Resource("configmaps"), &corev1.ConfigMap{ObjectMeta: ns, Data: map[string]string{"a.b-c_d": "v"}}, false},
		{"configmap bad key", corev1.Resource("configmaps"), &corev1.ConfigMap{ObjectMeta: ns, Data: map[string]string{"a/b": "v"}}, true},
		{"configmap key in both", corev1.Resource("configmaps"), &corev1.ConfigMap{ObjectMeta: ns, Data: map[string]string{"k": "v"}, BinaryData: map[string][]byte{"k": nil}}, true},
		{"configmap without namespace", corev1.Resource("configmaps"), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, true},
		{"configmap bad name", corev1.Resource("configmaps"), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "X!", Namespace: "default"}}, true},
		{"namespace bad name", corev1.Resource("namespaces"), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a.b"}}, true},
		{"namespace ok", corev1.Resource("namespaces"), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}, false},
		{"secret too big", corev1.Resource("secrets"), &corev1.Secret{ObjectMeta: ns, Data: map[string][]byte{"k": make([]byte, corev1.MaxSecretSize+1)}}, true},
		{"role name with colon", rbacv1.Resource("roles"), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "system:x", Namespace: "default"}}, false},
		{"role name with slash", rbacv1.Resource("roles"), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "a/b", Namespace: "default"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := strategyFor(t, tt.gr).Validate(context.Background(), tt.obj)
			if (len(errs) > 0) != tt.wantErr {
				t.Fatalf("errs = %v, wantErr %v", errs, tt.wantErr)
			}
		})
	}
}

func TestPrepare(t *testing.T) {
	s := strategyFor(t, corev1.Resource("secrets"))
	sec := &corev1.Secret{StringData: map[string]string{"a": "x"}, Data: map[string][]byte{"b": []byte("y")}}
	s.PrepareForCreate(context.Background(), sec)
	if sec.Type != corev1.SecretTypeOpaque || string(sec.Data["a"]) != "x" || string(sec.Data["b"]) != "y" || sec.StringData != nil {
		t.Fatalf("secret after create = %+v", sec)
	}
	old := sec.DeepCopy()
	upd := sec.DeepCopy()
	upd.Type = corev1.SecretTypeTLS
	if errs := s.ValidateUpdate(context.Background(), upd, old); len(errs) == 0 {
		t.Fatal("secret type change accepted")
	}

	nsS := strategyFor(t, corev1.Resource("namespaces"))
	n := &corev1.Namespace{Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	nsS.PrepareForCreate(context.Background(), n)
	if n.Status.Phase != corev1.NamespaceActive {
		t.Fatalf("namespace phase = %q", n.Status.Phase)
	}
	n2 := n.DeepCopy()
	n2.Status.Phase = corev1.NamespaceTerminating
	nsS.PrepareForUpdate(context.Background(), n2, n)
	if n2.Status.Phase != corev1.NamespaceActive {
		t.Fatal("client changed namespace status")
	}

	rb := strategyFor(t, rbacv1.Resource("rolebindings"))
	a := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "default", ResourceVersion: "1"}, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "r1"}}
	b := a.DeepCopy()
	b.RoleRef.Name = "r2"
	if errs := rb.ValidateUpdate(context.Background(), b, a); len(errs) == 0 {
		t.Fatal("roleRef change accepted")
	}
}
