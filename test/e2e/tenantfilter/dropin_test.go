package tenantfilter

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	capsulev1beta1 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta1"
	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
)

// TestDropIn is capsule-proxy's own end-to-end scenario where Capsule runs:
// Tenants wind and solar in Capsule's own object shape (fields the filter
// does not read included), owners alice and bob, namespaces tied to them the
// way Capsule ties them (ownerReference and label, and the newer label),
// statuses written by "Capsule" (here: the test, as the admin), and the
// proxy started with --status-controller=false over HTTPS like
// capsule-proxy. Each owner lists exactly their tenants' namespaces, with
// client-go and the real kubectl, and a watch sees namespaces added later
// (and never the other tenant's).
func TestDropIn(t *testing.T) {
	wind, solar := uniq("wind"), uniq("solar")
	fx.ApplyYAML(t, capsuleTenant(wind, "alice")+"---\n"+capsuleTenant(solar, "bob"))
	windT, solarT := getTenant(t, wind), getTenant(t, solar)
	w1, w2 := wind+"-prod", wind+"-dev"
	s1 := solar + "-prod"
	createTenantNamespace(t, windT, w1, linkCapsule)
	createTenantNamespace(t, windT, w2, linkProject)
	createTenantNamespace(t, solarT, s1, linkCapsule)
	// "Capsule's" statuses. wind's deliberately differs from what our
	// controller would compute (it lacks w2), so a controller that ran
	// despite --status-controller=false would show.
	for name, nss := range map[string][]string{wind: {w1}, solar: {s1}} {
		writeCapsuleStatus(t, name, nss)
	}

	witness := uniq("dropin-witness")
	createGlobalProxySettings(t, witness, capsulev1beta1.GlobalSubjectSpec{
		Subjects: []capsulev1beta1.GlobalSubject{{Kind: capsulev1beta2.UserOwner, Name: "nobody"}},
	})

	p := startProxy(t, proxyOptions{TLS: true, Args: []string{"--status-controller=false"}})

	for _, who := range []struct{ user, tenant, other string }{{"alice", wind, solar}, {"bob", solar, wind}} {
		want := visibleNamespaces(t, who.user)
		if !contains(want, who.tenant+"-prod") {
			t.Fatalf("test bug: %s's expected view %v lacks %s-prod", who.user, want, who.tenant)
		}
		list, err := p.Clientset(t, who.user).CoreV1().Namespaces().List(testCtx(t), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("%s lists namespaces through the proxy: %v", who.user, err)
		}
		if got := nsNames(list.Items); !reflect.DeepEqual(got, want) {
			t.Errorf("%s sees %v, want exactly %v", who.user, got, want)
		}
		out, err := p.Kubectl(t, who.user, "get", "namespaces", "-o", "name")
		if err != nil {
			t.Fatal(err)
		}
		if got := kubectlNames(out); !reflect.DeepEqual(got, want) {
			t.Errorf("kubectl as %s shows %v, want %v", who.user, got, want)
		}
		if _, err := p.Clientset(t, who.user).CoreV1().Namespaces().Get(testCtx(t), who.other+"-prod", metav1.GetOptions{}); err == nil {
			t.Errorf("%s can GET %s-prod of the other tenant", who.user, who.other)
		}
	}

	// A watch started now sees namespaces added later to alice's tenant,
	// and not bob's (events arrive in resourceVersion order, so solar's
	// namespace, created first, would show before wind's last one).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	alice := p.Clientset(t, "alice").CoreV1().Namespaces()
	list, err := alice.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := alice.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatalf("alice watches namespaces: %v", err)
	}
	defer w.Stop()
	w3 := wind + "-later"
	createTenantNamespace(t, windT, w3, linkCapsule)
	waitAdded(t, w, w3)
	s2, w4 := solar+"-later", wind+"-last"
	createTenantNamespace(t, solarT, s2, linkCapsule)
	createTenantNamespace(t, windT, w4, linkProject)
	waitAdded(t, w, w4, s2)

	// With --status-controller=false the proxy leaves Capsule's statuses
	// alone. A negative needs a window: 5s, longer than the controller
	// takes to sync and write when it is on (it does so at start, see
	// status_test.go). The witness GlobalProxySettings would get a Ready
	// condition, and wind's status the namespaces "Capsule" left out.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if got := getTenant(t, wind).Status.Namespaces; !reflect.DeepEqual(got, []string{w1}) {
			t.Fatalf("tenant %s status was rewritten with the controller off: %v", wind, got)
		}
		u, err := adminDynamic().Resource(capsulev1beta1.GlobalProxySettingsGVR).Get(testCtx(t), witness, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if st, ok := u.Object["status"]; ok {
			t.Fatalf("GlobalProxySettings %s got a status with the controller off: %v", witness, st)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// capsuleTenant is a Tenant the way Capsule's documentation writes one,
// with parts the filter never reads.
func capsuleTenant(name, owner string) string {
	return fmt.Sprintf(`apiVersion: capsule.clastix.io/v1beta2
kind: Tenant
metadata:
  name: %[1]s
spec:
  owners:
  - kind: User
    name: %[2]s
    clusterRoles: [admin, capsule-namespace-deleter]
  namespaceOptions:
    quota: 5
    additionalMetadata:
      labels: {tenant-tier: gold}
  resourceQuotas:
    scope: Tenant
    items:
    - hard: {limits.cpu: "8", pods: "20"}
  limitRanges:
    items:
    - limits:
      - type: Container
        default: {cpu: 500m}
  networkPolicies:
    items:
    - policyTypes: [Ingress]
      podSelector: {}
      ingress:
      - from:
        - namespaceSelector:
            matchLabels: {capsule.clastix.io/tenant: %[1]s}
  additionalRoleBindings:
  - clusterRoleName: view
    subjects:
    - {kind: Group, name: auditors, apiGroup: rbac.authorization.k8s.io}
  storageClasses:
    allowed: [standard]
    allowedRegex: "^%[1]s-.*$"
  ingressOptions:
    hostnameCollisionScope: Tenant
    allowedClasses:
      allowed: [nginx]
  nodeSelector:
    pool: %[1]s
`, name, owner)
}

// writeCapsuleStatus writes a Tenant status as Capsule does.
func writeCapsuleStatus(t *testing.T, name string, nss []string) {
	t.Helper()
	res := adminDynamic().Resource(capsulev1beta2.TenantsGVR)
	u, err := res.Get(testCtx(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(u.Object, "Active", "status", "state")
	_ = unstructured.SetNestedField(u.Object, int64(len(nss)), "status", "size")
	_ = unstructured.SetNestedStringSlice(u.Object, nss, "status", "namespaces")
	if _, err := res.UpdateStatus(testCtx(t), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// visibleNamespaces computes, as the admin, what a tenant user must see:
// the namespaces of every tenant the user owns (by name, or through one of
// the user's groups), sorted. The fixture is shared, so other tests'
// tenants of the same user count too; that is the point of "exactly".
func visibleNamespaces(t *testing.T, user string) []string {
	t.Helper()
	groups := map[string]bool{"system:authenticated": true}
	for _, u := range testUsers {
		if u.Name == user {
			for _, g := range u.Groups {
				groups[g] = true
			}
		}
	}
	tl, err := adminDynamic().Resource(capsulev1beta2.TenantsGVR).List(testCtx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owned := map[string]string{} // tenant name -> uid
	for _, u := range tl.Items {
		var tnt capsulev1beta2.Tenant
		if err := fromUnstructured(u.Object, &tnt); err != nil {
			t.Fatal(err)
		}
		for _, o := range tnt.Spec.Owners {
			if (o.Kind == capsulev1beta2.UserOwner || o.Kind == capsulev1beta2.ServiceAccountOwner) && o.Name == user ||
				o.Kind == capsulev1beta2.GroupOwner && groups[o.Name] {
				owned[tnt.Name] = string(tnt.UID)
			}
		}
	}
	nl, err := adminClientset().CoreV1().Namespaces().List(testCtx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ns := range nl.Items {
		if nsInTenants(ns, owned) {
			out = append(out, ns.Name)
		}
	}
	return sorted(out...)
}

func nsInTenants(ns corev1.Namespace, owned map[string]string) bool {
	if _, ok := owned[ns.Labels[capsulev1beta2.TenantLabel]]; ok {
		return true
	}
	if _, ok := owned[ns.Labels[capsulev1beta2.ProjectTenantLabel]]; ok {
		return true
	}
	for _, r := range ns.OwnerReferences {
		if uid, ok := owned[r.Name]; ok && r.Kind == "Tenant" && strings.HasPrefix(r.APIVersion, capsulev1beta2.GroupName+"/") && string(r.UID) == uid {
			return true
		}
	}
	return false
}

func nsNames(items []corev1.Namespace) []string {
	var out []string
	for _, ns := range items {
		out = append(out, ns.Name)
	}
	return sorted(out...)
}

func kubectlNames(out string) []string {
	var names []string
	for _, l := range strings.Fields(out) {
		names = append(names, strings.TrimPrefix(l, "namespace/"))
	}
	return sorted(names...)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// waitAdded reads watch events until an ADDED for name arrives; any ADDED
// for one of forbidden before it fails the test.
func waitAdded(t *testing.T, w watch.Interface, name string, forbidden ...string) {
	t.Helper()
	timeout := time.After(statusTimeout)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed before %s was added", name)
			}
			ns, isNS := ev.Object.(*corev1.Namespace)
			if !isNS {
				t.Fatalf("watch event %s: %T %v", ev.Type, ev.Object, ev.Object)
			}
			if contains(forbidden, ns.Name) {
				t.Fatalf("watch delivered %s %s, which the user may not see", ev.Type, ns.Name)
			}
			if ev.Type == watch.Added && ns.Name == name {
				return
			}
		case <-timeout:
			t.Fatalf("no ADDED event for %s within %s", name, statusTimeout)
		}
	}
}
