package validation

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// RegisterDefaults adds the defaults kube-apiserver applies when it decodes
// an object (and after a patch) that the validation here relies on, as
// upstream's does: roleRef.apiGroup and the apiGroup of User and Group
// subjects default to rbac.authorization.k8s.io, a Secret's type to Opaque
// (so an update that omits the type does not change it).
func RegisterDefaults(s *runtime.Scheme) {
	s.AddTypeDefaultingFunc(&corev1.Secret{}, func(obj any) { defaultSecretType(obj.(*corev1.Secret)) })
	s.AddTypeDefaultingFunc(&corev1.SecretList{}, func(obj any) {
		for i := range obj.(*corev1.SecretList).Items {
			defaultSecretType(&obj.(*corev1.SecretList).Items[i])
		}
	})
	s.AddTypeDefaultingFunc(&rbacv1.RoleBinding{}, func(obj any) {
		rb := obj.(*rbacv1.RoleBinding)
		defaultBinding(&rb.RoleRef, rb.Subjects)
	})
	s.AddTypeDefaultingFunc(&rbacv1.ClusterRoleBinding{}, func(obj any) {
		crb := obj.(*rbacv1.ClusterRoleBinding)
		defaultBinding(&crb.RoleRef, crb.Subjects)
	})
	s.AddTypeDefaultingFunc(&rbacv1.RoleBindingList{}, func(obj any) {
		for i := range obj.(*rbacv1.RoleBindingList).Items {
			rb := &obj.(*rbacv1.RoleBindingList).Items[i]
			defaultBinding(&rb.RoleRef, rb.Subjects)
		}
	})
	s.AddTypeDefaultingFunc(&rbacv1.ClusterRoleBindingList{}, func(obj any) {
		for i := range obj.(*rbacv1.ClusterRoleBindingList).Items {
			crb := &obj.(*rbacv1.ClusterRoleBindingList).Items[i]
			defaultBinding(&crb.RoleRef, crb.Subjects)
		}
	})
}

func defaultSecretType(s *corev1.Secret) {
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
}

func defaultBinding(ref *rbacv1.RoleRef, subjects []rbacv1.Subject) {
	if ref.APIGroup == "" {
		ref.APIGroup = rbacv1.GroupName
	}
	for i := range subjects {
		s := &subjects[i]
		if s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
	}
}
