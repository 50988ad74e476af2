package tenantfilter

import (
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	capsulev1beta1 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta1"
	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
)

// Objects are never deleted: the fixture has no namespace or garbage
// collector controller, so a deleted namespace would stay Terminating
// forever. Unique names (uniq) keep tests apart instead.

func userOwner(name string, ps ...capsulev1beta2.ProxySettings) capsulev1beta2.OwnerSpec {
	return capsulev1beta2.OwnerSpec{Kind: capsulev1beta2.UserOwner, Name: name, ProxyOperations: ps}
}

func groupOwner(name string, ps ...capsulev1beta2.ProxySettings) capsulev1beta2.OwnerSpec {
	return capsulev1beta2.OwnerSpec{Kind: capsulev1beta2.GroupOwner, Name: name, ProxyOperations: ps}
}

func saOwner(namespace, name string) capsulev1beta2.OwnerSpec {
	return capsulev1beta2.OwnerSpec{Kind: capsulev1beta2.ServiceAccountOwner, Name: "system:serviceaccount:" + namespace + ":" + name}
}

// newTenant is a Tenant as a Capsule user writes it.
func newTenant(name string, owners ...capsulev1beta2.OwnerSpec) *capsulev1beta2.Tenant {
	return &capsulev1beta2.Tenant{
		TypeMeta:   metav1.TypeMeta{APIVersion: capsulev1beta2.SchemeGroupVersion.String(), Kind: "Tenant"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       capsulev1beta2.TenantSpec{Owners: owners},
	}
}

// toUnstructured converts a typed object for the dynamic client.
func toUnstructured(t testing.TB, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// createTenant creates tnt as the admin and returns it as stored.
func createTenant(t testing.TB, tnt *capsulev1beta2.Tenant) *capsulev1beta2.Tenant {
	t.Helper()
	u, err := adminDynamic().Resource(capsulev1beta2.TenantsGVR).Create(testCtx(t), toUnstructured(t, tnt), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create tenant %s: %v", tnt.Name, err)
	}
	out := &capsulev1beta2.Tenant{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// getTenant reads a tenant as the admin, straight from the kube-apiserver.
func getTenant(t testing.TB, name string) *capsulev1beta2.Tenant {
	t.Helper()
	u, err := adminDynamic().Resource(capsulev1beta2.TenantsGVR).Get(testCtx(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get tenant %s: %v", name, err)
	}
	out := &capsulev1beta2.Tenant{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// How a namespace is tied to its tenant.
type nsLink int

const (
	linkCapsule  nsLink = iota // ownerReference + capsule.clastix.io/tenant, as Capsule writes it
	linkLabel                  // only capsule.clastix.io/tenant
	linkProject                // only projectcapsule.dev/tenant
	linkOwnerRef               // only the ownerReference
)

// createTenantNamespace creates a namespace of tnt (linked as link says),
// its "default" ServiceAccount, and a RoleBinding to tenant-admin for every
// owner, as Capsule does for owners.
func createTenantNamespace(t testing.TB, tnt *capsulev1beta2.Tenant, name string, link nsLink) *corev1.Namespace {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	if link == linkCapsule || link == linkLabel {
		ns.Labels[capsulev1beta2.TenantLabel] = tnt.Name
	}
	if link == linkProject {
		ns.Labels[capsulev1beta2.ProjectTenantLabel] = tnt.Name
	}
	if link == linkCapsule || link == linkOwnerRef {
		ctrl := true
		ns.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: capsulev1beta2.SchemeGroupVersion.String(), Kind: "Tenant",
			Name: tnt.Name, UID: tnt.UID, Controller: &ctrl, BlockOwnerDeletion: &ctrl,
		}}
	}
	created := createNamespace(t, ns)
	var subjects []rbacv1.Subject
	for _, o := range tnt.Spec.Owners {
		subjects = append(subjects, ownerSubject(o))
	}
	if len(subjects) > 0 {
		createRoleBinding(t, name, "tenant-owners", "tenant-admin", nil, subjects...)
	}
	return created
}

func ownerSubject(o capsulev1beta2.OwnerSpec) rbacv1.Subject {
	switch o.Kind {
	case capsulev1beta2.GroupOwner:
		return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: o.Name}
	default: // User, and a ServiceAccount by its username
		return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: o.Name}
	}
}

// createNamespace creates ns (and its default ServiceAccount) as the admin.
func createNamespace(t testing.TB, ns *corev1.Namespace) *corev1.Namespace {
	t.Helper()
	created, err := adminClientset().CoreV1().Namespaces().Create(testCtx(t), ns, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", ns.Name, err)
	}
	fx.EnsureServiceAccount(t, ns.Name, "default")
	return created
}

// createRoleBinding binds a ClusterRole in namespace ns.
func createRoleBinding(t testing.TB, ns, name, clusterRole string, labels map[string]string, subjects ...rbacv1.Subject) {
	t.Helper()
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   subjects,
	}
	if _, err := adminClientset().RbacV1().RoleBindings(ns).Create(testCtx(t), rb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create rolebinding %s/%s: %v", ns, name, err)
	}
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}
}

// createGlobalProxySettings creates a GlobalProxySettings as the admin.
func createGlobalProxySettings(t testing.TB, name string, rules ...capsulev1beta1.GlobalSubjectSpec) {
	t.Helper()
	g := &capsulev1beta1.GlobalProxySettings{
		TypeMeta:   metav1.TypeMeta{APIVersion: capsulev1beta1.SchemeGroupVersion.String(), Kind: "GlobalProxySettings"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       capsulev1beta1.GlobalProxySettingsSpec{Rules: rules},
	}
	if _, err := adminDynamic().Resource(capsulev1beta1.GlobalProxySettingsGVR).Create(testCtx(t), toUnstructured(t, g), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create GlobalProxySettings %s: %v", name, err)
	}
}

// createProxySetting creates a ProxySetting in namespace ns as the admin.
func createProxySetting(t testing.TB, ns, name string, subjects ...capsulev1beta1.OwnerSpec) {
	t.Helper()
	ps := &capsulev1beta1.ProxySetting{
		TypeMeta:   metav1.TypeMeta{APIVersion: capsulev1beta1.SchemeGroupVersion.String(), Kind: "ProxySetting"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       capsulev1beta1.ProxySettingSpec{Subjects: subjects},
	}
	if _, err := adminDynamic().Resource(capsulev1beta1.ProxySettingsGVR).Namespace(ns).Create(testCtx(t), toUnstructured(t, ps), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ProxySetting %s/%s: %v", ns, name, err)
	}
}

func unstructuredSlice(obj map[string]any, fields ...string) ([]any, bool, error) {
	return unstructured.NestedSlice(obj, fields...)
}

// nsObj is a bare namespace named name.
func nsObj(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// sorted returns names sorted.
func sorted(names ...string) []string {
	out := append([]string(nil), names...)
	sort.Strings(out)
	return out
}

func fromUnstructured(m map[string]any, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, into)
}
