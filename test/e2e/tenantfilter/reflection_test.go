package tenantfilter

import (
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wharfhub/wharf/providers/tenantfilter/core"
)

// reflectionRBAC: a role that may list pods, for reflected bindings.
const reflectionRBAC = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: reflection-pod-reader}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get, list, watch]}
`

func createPod(t testing.TB, ns, name string) {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}}}
	if _, err := adminClientset().CoreV1().Pods(ns).Create(testCtx(t), p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s/%s: %v", ns, name, err)
	}
}

// boundNamespaces are the namespaces where some RoleBinding names user
// (what namespace reflection adds), from the admin's view.
func boundNamespaces(t testing.TB, user string) []string {
	t.Helper()
	l, err := adminClientset().RbacV1().RoleBindings("").List(testCtx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, rb := range l.Items {
		for _, s := range rb.Subjects {
			if s.Kind == rbacv1.UserKind && s.Name == user {
				out = append(out, rb.Namespace)
			}
		}
	}
	return out
}

func union(lists ...[]string) []string {
	set := map[string]bool{}
	for _, l := range lists {
		for _, v := range l {
			set[v] = true
		}
	}
	var out []string
	for v := range set {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// TestReflection is capsule-proxy's reflection scenario with
// --enable-reflector: bob sees his tenants' namespaces plus exactly the one
// a RoleBinding reflects to him, and "get pods -A" returns exactly the pods
// of the tenant namespaces a labelled RoleBinding reflects (with the
// tenant's sibling namespace), nothing else.
func TestReflection(t *testing.T) {
	fx.ApplyYAML(t, reflectionRBAC)
	wind := createTenant(t, newTenant(uniq("wind"), userOwner("alice")))
	createTenant(t, newTenant(uniq("solar"), userOwner("bob")))
	windA := createTenantNamespace(t, wind, uniq("wind-refl-a"), linkCapsule).Name
	windB := createTenantNamespace(t, wind, uniq("wind-refl-b"), linkCapsule).Name
	plain := uniq("reflected")
	createNamespace(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: plain}})
	unrelated := uniq("unrelated")
	createNamespace(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: unrelated}})
	createPod(t, windA, "reflected-pod")
	createPod(t, windB, "sibling-pod")
	createPod(t, plain, "plain-pod")
	createPod(t, unrelated, "unrelated-pod")

	tg := startNSTarget(t, nsOptions{Reflector: true})
	bob := targetClientset(t, tg, "bob")

	t.Run("bob sees exactly the reflected namespace besides his own", func(t *testing.T) {
		before, err := listNamespaceNames(t, bob)
		if err != nil {
			t.Fatal(err)
		}
		if containsStr(before, plain) {
			t.Fatalf("%s visible before any binding: %v", plain, before)
		}
		createRoleBinding(t, plain, "bob-view", "reflection-pod-reader", nil, userSubject("bob"))
		eventually(t, time.Minute, func() error {
			got, err := listNamespaceNames(t, bob)
			if err != nil {
				return err
			}
			want := union(ownedNamespaces(t, "bob", groupsOf("bob")), boundNamespaces(t, "bob"))
			if !reflect.DeepEqual(got, want) || !containsStr(got, plain) || containsStr(got, unrelated) || containsStr(got, windA) {
				return fmt.Errorf("bob lists %v, want %v (with %s)", got, want, plain)
			}
			return nil
		})
	})

	t.Run("get pods -A shows exactly the reflected pods", func(t *testing.T) {
		createRoleBinding(t, windA, "bob-reflected", "reflection-pod-reader",
			map[string]string{core.ReflectionLabel: "true"}, userSubject("bob"))
		want := []string{windA + "/reflected-pod", windB + "/sibling-pod"}
		eventually(t, time.Minute, func() error {
			l, err := bob.CoreV1().Pods("").List(testCtx(t), metav1.ListOptions{})
			if err != nil {
				return err
			}
			var got []string
			for _, p := range l.Items {
				got = append(got, p.Namespace+"/"+p.Name)
			}
			sort.Strings(got)
			if !reflect.DeepEqual(got, want) {
				return fmt.Errorf("bob pods -A: %v, want %v", got, want)
			}
			return nil
		})
		out, err := tg.Kubectl(t, "bob", "get", "pods", "-A", "--no-headers", "-o", "custom-columns=NS:.metadata.namespace,NAME:.metadata.name")
		if err != nil {
			t.Fatal(err)
		}
		if got := columns(out, 2); !reflect.DeepEqual(got, []string{windA + " reflected-pod", windB + " sibling-pod"}) {
			t.Fatalf("kubectl get pods -A as bob:\n%s", out)
		}
	})
}
