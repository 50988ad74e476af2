package registry

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/wharfhub/wharf/hub/registry/validation"
)

// BuiltinKinds returns the built-in resources served in every workspace,
// grouped by group version.
func BuiltinKinds() map[schema.GroupVersion][]*Kind {
	return map[schema.GroupVersion][]*Kind{
		corev1.SchemeGroupVersion: {
			{
				Resource: corev1.Resource("namespaces"), Singular: "namespace", ShortNames: []string{"ns"},
				New: func() runtime.Object { return &corev1.Namespace{} }, NewList: func() runtime.Object { return &corev1.NamespaceList{} },
				Table:            namespaceTable,
				NameValidation:   apimachineryvalidation.ValidateNamespaceName,
				Validate:         validation.Namespace,
				PrepareForCreate: prepareNamespace,
				PrepareForUpdate: prepareNamespaceUpdate,
			},
			{
				Resource: corev1.Resource("configmaps"), Singular: "configmap", Namespaced: true, ShortNames: []string{"cm"},
				New: func() runtime.Object { return &corev1.ConfigMap{} }, NewList: func() runtime.Object { return &corev1.ConfigMapList{} },
				Table:    configMapTable,
				Validate: validation.ConfigMap, ValidateUpdate: validation.ConfigMapUpdate,
			},
			{
				Resource: corev1.Resource("secrets"), Singular: "secret", Namespaced: true,
				New: func() runtime.Object { return &corev1.Secret{} }, NewList: func() runtime.Object { return &corev1.SecretList{} },
				Table:            secretTable,
				PrepareForCreate: defaultSecret,
				PrepareForUpdate: func(obj, old runtime.Object) { mergeStringData(obj.(*corev1.Secret)) },
				Validate:         validation.Secret, ValidateUpdate: validation.SecretUpdate,
			},
			{
				Resource: corev1.Resource("serviceaccounts"), Singular: "serviceaccount", Namespaced: true, ShortNames: []string{"sa"},
				New: func() runtime.Object { return &corev1.ServiceAccount{} }, NewList: func() runtime.Object { return &corev1.ServiceAccountList{} },
				Table: serviceAccountTable,
			},
			resourceQuotaKind,
		},
		rbacv1.SchemeGroupVersion: {
			{
				Resource: rbacv1.Resource("roles"), Singular: "role", Namespaced: true,
				New: func() runtime.Object { return &rbacv1.Role{} }, NewList: func() runtime.Object { return &rbacv1.RoleList{} },
				Table:          roleTable,
				NameValidation: path.ValidatePathSegmentName, Validate: validation.Role,
			},
			{
				Resource: rbacv1.Resource("rolebindings"), Singular: "rolebinding", Namespaced: true,
				New: func() runtime.Object { return &rbacv1.RoleBinding{} }, NewList: func() runtime.Object { return &rbacv1.RoleBindingList{} },
				Table:          roleBindingTable,
				NameValidation: path.ValidatePathSegmentName, Validate: validation.RoleBinding, ValidateUpdate: validation.RoleBindingUpdate,
			},
			{
				Resource: rbacv1.Resource("clusterroles"), Singular: "clusterrole",
				New: func() runtime.Object { return &rbacv1.ClusterRole{} }, NewList: func() runtime.Object { return &rbacv1.ClusterRoleList{} },
				Table:          roleTable,
				NameValidation: path.ValidatePathSegmentName, Validate: validation.ClusterRole,
			},
			{
				Resource: rbacv1.Resource("clusterrolebindings"), Singular: "clusterrolebinding",
				New: func() runtime.Object { return &rbacv1.ClusterRoleBinding{} }, NewList: func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} },
				Table:          clusterRoleBindingTable,
				NameValidation: path.ValidatePathSegmentName, Validate: validation.ClusterRoleBinding, ValidateUpdate: validation.ClusterRoleBindingUpdate,
			},
		},
		coordinationv1.SchemeGroupVersion: {
			{
				Resource: coordinationv1.Resource("leases"), Singular: "lease", Namespaced: true,
				New: func() runtime.Object { return &coordinationv1.Lease{} }, NewList: func() runtime.Object { return &coordinationv1.LeaseList{} },
				Table:            leaseTable,
				Validate:         validation.Lease,
				PrepareForCreate: func(obj runtime.Object) { validation.DropDisabledLeaseFields(obj, nil) },
				PrepareForUpdate: validation.DropDisabledLeaseFields,
			},
		},
	}
}

// NewBuiltinStorage builds REST storage for every built-in kind, keyed by
// group version and then resource name, as genericapiserver.APIGroupInfo
// expects. Namespaces get a *NamespaceStorage, every other kind a *Store.
func NewBuiltinStorage(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (map[schema.GroupVersion]map[string]rest.Storage, error) {
	out := map[schema.GroupVersion]map[string]rest.Storage{}
	for gv, kinds := range BuiltinKinds() {
		out[gv] = map[string]rest.Storage{}
		for _, k := range kinds {
			s, err := NewStore(typer, optsGetter, k)
			if err != nil {
				return nil, err
			}
			if k.Resource == corev1.Resource("namespaces") {
				// Namespaces are served without deletecollection, as upstream.
				ns := NewNamespaceStorage(s)
				out[gv][k.Resource.Resource] = ns
				out[gv]["namespaces/status"] = ns.Status()
				out[gv]["namespaces/finalize"] = ns.Finalize()
				continue
			}
			out[gv][k.Resource.Resource] = s
			if k == resourceQuotaKind {
				out[gv]["resourcequotas/status"] = newResourceQuotaStatus(s.Store)
			}
		}
	}
	return out, nil
}

func defaultSecret(obj runtime.Object) {
	s := obj.(*corev1.Secret)
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	mergeStringData(s)
}

// mergeStringData folds the write-only stringData field into data, as the
// upstream v1 conversion does; stringData is never stored or returned.
func mergeStringData(s *corev1.Secret) {
	if len(s.StringData) == 0 {
		s.StringData = nil
		return
	}
	if s.Data == nil {
		s.Data = make(map[string][]byte, len(s.StringData))
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}
