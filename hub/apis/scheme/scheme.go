// Package scheme holds the runtime.Scheme of the hub's own API groups.
//
// The hub serves the published k8s.io/api types directly. Upstream servers
// keep separate internal types and convert at the edge; those internal types
// live in k8s.io/kubernetes, which is not importable. Registering each
// external type a second time under the group's internal version makes the
// external type its own internal representation: the scheme then "converts"
// by copying and re-stamping the kind, which is exact because the types are
// identical.
package scheme

import (
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	providersv1alpha1 "github.com/wharfhub/wharf/hub/apis/providers/v1alpha1"
	tenancyv1alpha1 "github.com/wharfhub/wharf/hub/apis/tenancy/v1alpha1"
	"github.com/wharfhub/wharf/hub/registry/validation"
)

// New returns a scheme with every group the hub serves itself (CRDs and
// apiextensions have their own scheme upstream).
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, gv := range servedGroupVersions {
		types := servedTypes[gv]
		s.AddKnownTypes(gv, types...)
		s.AddKnownTypes(schema.GroupVersion{Group: gv.Group, Version: runtime.APIVersionInternal}, types...)
		metav1.AddToGroupVersion(s, gv)
		if err := s.SetVersionPriority(gv); err != nil {
			panic(err) // static data; a failure is a programming error
		}
	}
	// Upstream's decode-time defaults the built-in validation relies on.
	validation.RegisterDefaults(s)
	// kube-aggregator's (spec.service.port 443), which its validation
	// relies on.
	if err := apiregv1.RegisterDefaults(s); err != nil {
		panic(err) // static data; a failure is a programming error
	}
	if err := registerEvents(s); err != nil {
		panic(err) // static data; a failure is a programming error
	}
	// Options types and API discovery types for the unversioned endpoints,
	// as every generic apiserver registers them.
	unversioned := schema.GroupVersion{Group: "", Version: "v1"}
	metav1.AddToGroupVersion(s, unversioned)
	s.AddUnversionedTypes(unversioned,
		&metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
	return s
}

// NewCodecs returns the codec factory for a scheme built by New.
func NewCodecs(s *runtime.Scheme) serializer.CodecFactory { return serializer.NewCodecFactory(s) }

// servedGroupVersions fixes the registration order, which decides version
// priority and so the storage version.
var servedGroupVersions = []schema.GroupVersion{
	corev1.SchemeGroupVersion,
	rbacv1.SchemeGroupVersion,
	coordinationv1.SchemeGroupVersion,
	authorizationv1.SchemeGroupVersion,
	authenticationv1.SchemeGroupVersion,
	tenancyv1alpha1.SchemeGroupVersion,
	providersv1alpha1.SchemeGroupVersion,
	apiregv1.SchemeGroupVersion,
}

var servedTypes = map[schema.GroupVersion][]runtime.Object{
	corev1.SchemeGroupVersion: {
		&corev1.Namespace{}, &corev1.NamespaceList{},
		&corev1.ConfigMap{}, &corev1.ConfigMapList{},
		&corev1.Secret{}, &corev1.SecretList{},
		&corev1.ServiceAccount{}, &corev1.ServiceAccountList{},
		&corev1.Event{}, &corev1.EventList{},
		&corev1.ResourceQuota{}, &corev1.ResourceQuotaList{},
	},
	rbacv1.SchemeGroupVersion: {
		&rbacv1.Role{}, &rbacv1.RoleList{},
		&rbacv1.RoleBinding{}, &rbacv1.RoleBindingList{},
		&rbacv1.ClusterRole{}, &rbacv1.ClusterRoleList{},
		&rbacv1.ClusterRoleBinding{}, &rbacv1.ClusterRoleBindingList{},
	},
	coordinationv1.SchemeGroupVersion: {
		&coordinationv1.Lease{}, &coordinationv1.LeaseList{},
	},
	authorizationv1.SchemeGroupVersion: {
		&authorizationv1.SelfSubjectAccessReview{}, &authorizationv1.LocalSubjectAccessReview{},
		&authorizationv1.SubjectAccessReview{}, &authorizationv1.SelfSubjectRulesReview{},
	},
	authenticationv1.SchemeGroupVersion: {
		&authenticationv1.SelfSubjectReview{}, &authenticationv1.TokenRequest{}, &authenticationv1.TokenReview{},
	},
	tenancyv1alpha1.SchemeGroupVersion: {
		&tenancyv1alpha1.Workspace{}, &tenancyv1alpha1.WorkspaceList{},
	},
	providersv1alpha1.SchemeGroupVersion: {
		&providersv1alpha1.CatalogEntry{}, &providersv1alpha1.CatalogEntryList{},
		&providersv1alpha1.ProviderBinding{}, &providersv1alpha1.ProviderBindingList{},
	},
	apiregv1.SchemeGroupVersion: {
		&apiregv1.APIService{}, &apiregv1.APIServiceList{},
	},
}
