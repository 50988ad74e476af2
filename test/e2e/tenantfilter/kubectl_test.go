package tenantfilter

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestKubectl: the real kubectl through the standalone proxy lists exactly
// the caller's tenant namespaces.
func TestKubectl(t *testing.T) {
	p := startProxy(t, proxyOptions{TLS: true})
	wind := createTenant(t, newTenant(uniq("kwind"), userOwner("alice")))
	solar := createTenant(t, newTenant(uniq("ksolar"), userOwner("bob")))
	a1, a2, b1 := uniq("kwind-a"), uniq("kwind-b"), uniq("ksolar-a")
	createTenantNamespace(t, wind, a1, linkCapsule)
	createTenantNamespace(t, wind, a2, linkLabel)
	createTenantNamespace(t, solar, b1, linkCapsule)

	for _, tc := range []struct {
		user      string
		mine, not []string
	}{{"alice", []string{a1, a2}, []string{b1}}, {"bob", []string{b1}, []string{a1, a2}}} {
		eventually(t, time.Minute, func() error {
			out, err := p.Kubectl(t, tc.user, "get", "namespaces", "-o", "name")
			if err != nil {
				return err
			}
			got := kubectlNames(out)
			// Exactly the namespaces of every tenant the user owns (the
			// fixture is shared, so other tests' tenants count too).
			if want := visibleNamespaces(t, tc.user); !slices.Equal(got, want) {
				return fmt.Errorf("%s: kubectl get ns = %v, want %v", tc.user, got, want)
			}
			for _, n := range tc.mine {
				if !slices.Contains(got, n) {
					return fmt.Errorf("%s: kubectl get ns = %v lacks %s", tc.user, got, n)
				}
			}
			for _, n := range tc.not {
				if slices.Contains(got, n) {
					t.Fatalf("%s sees %s", tc.user, n)
				}
			}
			return nil
		})
	}
	// A named get of someone else's namespace is NotFound, never Forbidden.
	if _, err := p.Kubectl(t, "alice", "get", "namespace", b1); err == nil || !strings.Contains(err.Error(), "NotFound") {
		t.Fatalf("alice get ns %s: %v, want NotFound", b1, err)
	}
	out, err := p.Kubectl(t, "alice", "auth", "can-i", "list", "namespaces")
	if err != nil || strings.TrimSpace(out) != "yes" {
		t.Fatalf("kubectl auth can-i list namespaces as alice: %q %v, want yes", out, err)
	}
}

// TestK9sSequence replays what k9s does on start: a
// SelfSubjectAccessReview for listing namespaces, then the list, then a
// watch from the list's resourceVersion, which must see a namespace added
// later.
func TestK9sSequence(t *testing.T) {
	p := startProxy(t, proxyOptions{TLS: true})
	tnt := createTenant(t, newTenant(uniq("k9s"), userOwner("carol")))
	first := uniq("k9s-a")
	createTenantNamespace(t, tnt, first, linkCapsule)
	cs := p.Clientset(t, "carol")
	ctx := testCtx(t)

	for _, verb := range []string{"list", "watch"} {
		ssar, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: verb, Resource: "namespaces"}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SSAR %s namespaces: %v", verb, err)
		}
		if !ssar.Status.Allowed {
			t.Fatalf("SSAR %s namespaces for a tenant owner: not allowed (%s)", verb, ssar.Status.Reason)
		}
	}
	var list *corev1.NamespaceList
	eventually(t, time.Minute, func() error {
		var err error
		if list, err = cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
			return err
		}
		if got, want := nsNames(list.Items), visibleNamespaces(t, "carol"); !slices.Equal(got, want) || !slices.Contains(got, first) {
			return fmt.Errorf("list = %v, want %v with %s", got, want, first)
		}
		return nil
	})
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	w, err := cs.CoreV1().Namespaces().Watch(wctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatalf("watch namespaces: %v", err)
	}
	defer w.Stop()
	later := uniq("k9s-b")
	createTenantNamespace(t, tnt, later, linkCapsule)
	other := uniq("k9s-other")
	createNamespace(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}})
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			t.Fatalf("watch error: %v", ev.Object)
		}
		ns, ok := ev.Object.(*corev1.Namespace)
		if !ok {
			continue
		}
		if ns.Name == other {
			t.Fatalf("watch showed %s, which is not carol's", other)
		}
		if ns.Name == later && ev.Type == watch.Added {
			return
		}
	}
	t.Fatalf("watch ended before %s appeared", later)
}
