package hub

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Issue 24, item 5: every controller that serves all workspaces queues per
// tenant and takes turns, so one tenant's backlog delays only that tenant.
// The rows below cover the controllers the first round left on one FIFO
// queue (attack_limits_bg_test.go has B4 and B7). As there, they assert
// order, not time: the victim's item must be handled while most of the
// attacker's backlog is still waiting. On a FIFO queue the victim's item
// came after the whole backlog.

var providerBindingsGVR = schema.GroupVersionResource{Group: "providers.wharf.dev", Version: "v1alpha1", Resource: "providerbindings"}

// changedSince counts the items of list whose resourceVersion is not the
// one recorded in rv: the objects a controller has written since.
func changedSince(rv map[string]string, list *unstructured.UnstructuredList) int {
	n := 0
	for _, o := range list.Items {
		if v, ok := rv[o.GetNamespace()+"/"+o.GetName()]; ok && v != o.GetResourceVersion() {
			n++
		}
	}
	return n
}

func resourceVersions(list *unstructured.UnstructuredList) map[string]string {
	rv := make(map[string]string, len(list.Items))
	for _, o := range list.Items {
		rv[o.GetNamespace()+"/"+o.GetName()] = o.GetResourceVersion()
	}
	return rv
}

// hasCondition reports whether obj's status has a condition of type typ
// with status want.
func hasCondition(obj *unstructured.Unstructured, typ, want string) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ && m["status"] == want {
			return true
		}
	}
	return false
}

// copyExecutable copies the binary at from to a file of the test's own.
func copyExecutable(t *testing.T, from string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), filepath.Base(from))
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return to
}

// TestAttackLimitsQueuesEnablement, r24:q1: an attacker binds one provider
// bindings times in her workspace. When the provider goes down, every
// binding of it is queued at once to record that (the enablement
// controller's queue); right after, a victim of another tenant enables the
// same provider. Her binding is bound while most of the attacker's
// bindings are still waiting. On the one-tenant queue it was bound only
// after every one of them.
func TestAttackLimitsQueuesEnablement(t *testing.T) {
	t.Parallel()
	const bindings = 600
	ctx := context.Background()
	// The hub runs a copy it cannot restart once the copy is gone: the
	// provider then stays down, so every binding the controller looks at
	// is written (Ready False) and the count below sees it.
	bin := copyExecutable(t, exampleProvider(t))
	h := catalogHub(t, "example="+bin)
	h.createWorkspace("root", "q-attacker")
	h.createWorkspace("root", "q-victim")
	entry := h.waitCatalogReady(t, "example")

	t.Run("r24:q1/a tenant's bindings queued at once do not hold another tenant's binding", func(t *testing.T) {
		att := bgClientsFor(t, h, "root:q-attacker").dyn.Resource(providerBindingsGVR)
		vic := bgClientsFor(t, h, "root:q-victim").dyn.Resource(providerBindingsGVR)
		binding := func(name string) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "providers.wharf.dev/v1alpha1", "kind": "ProviderBinding",
				"metadata": map[string]any{"name": name}, "spec": map[string]any{"provider": "example"}}}
		}
		if err := parallel(bindings, func(i int) error {
			_, err := att.Create(ctx, binding(fmt.Sprintf("b-%d", i)), metav1.CreateOptions{})
			return err
		}); err != nil {
			t.Fatalf("creating the attacker's bindings: %v", err)
		}
		// Wait until the controller has recorded every one as ready.
		var list *unstructured.UnstructuredList
		eventually(t, 3*time.Minute, func() error {
			var err error
			if list, err = att.List(ctx, metav1.ListOptions{}); err != nil {
				return err
			}
			ready := 0
			for i := range list.Items {
				if hasCondition(&list.Items[i], "Ready", "True") {
					ready++
				}
			}
			if ready != bindings {
				return fmt.Errorf("%d of %d bindings ready", ready, bindings)
			}
			return nil
		})
		rv := resourceVersions(list)

		// The provider goes down and stays down.
		if err := os.Remove(bin); err != nil {
			t.Fatal(err)
		}
		pid := pidOf(entry)
		if pid == 0 {
			t.Fatalf("no provider pid in %+v", entry.Status.Replicas)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// The backlog is there once the controller starts writing.
		var before int
		eventually(t, 2*time.Minute, func() error {
			l, err := att.List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			if before = changedSince(rv, l); before == 0 {
				return fmt.Errorf("no binding written since the provider went down")
			}
			return nil
		})
		if before > bindings/2 {
			t.Fatalf("the attack built no backlog: %d of %d bindings already written", before, bindings)
		}

		// The victim enables the provider in her workspace.
		if _, err := vic.Create(ctx, binding("example"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("victim's binding: %v", err)
		}
		eventually(t, 3*time.Minute, func() error {
			b, err := vic.Get(ctx, "example", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !hasCondition(b, "Bound", "True") {
				return fmt.Errorf("victim's binding not bound yet: %v", b.Object["status"])
			}
			return nil
		})
		l, err := att.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		after := changedSince(rv, l)
		t.Logf("attacker's bindings written: %d when the victim bound, %d when her binding was bound (of %d)", before, after, bindings)
		if after >= bindings {
			t.Fatalf("the victim's binding was bound only after the controller got through all %d of the attacker's bindings", bindings)
		}
	})
}

// TestAttackLimitsQueuesResourceQuota, r24:q2: an attacker creates a
// ResourceQuota in each of her namespaces at once, each naming hundreds of
// resources to count, so each recount costs hundreds of etcd reads (the
// ResourceQuota controller's queue); right after, a victim of another
// tenant creates a quota. Its status.used is counted while most of the
// attacker's quotas still wait. On the FIFO queue it came after all.
func TestAttackLimitsQueuesResourceQuota(t *testing.T) {
	t.Parallel()
	const namespaces, names = 150, 200
	ctx := context.Background()
	h := startHub(t, hubOptions{})
	h.createWorkspace("root", "rq-attacker")
	h.createWorkspace("root", "rq-victim")

	t.Run("r24:q2/a tenant's costly quotas do not hold another tenant's quota", func(t *testing.T) {
		att := bgClientsFor(t, h, "root:rq-attacker")
		vic := bgClientsFor(t, h, "root:rq-victim").kube.CoreV1().ResourceQuotas("default")
		quotas := att.dyn.Resource(corev1.SchemeGroupVersion.WithResource("resourcequotas"))
		if err := parallel(namespaces, func(i int) error {
			_, err := att.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns-%d", i)}}, metav1.CreateOptions{})
			return err
		}); err != nil {
			t.Fatalf("creating the attacker's namespaces: %v", err)
		}
		hard := corev1.ResourceList{}
		for j := 0; j < names; j++ {
			hard[corev1.ResourceName(fmt.Sprintf("count/r%d.example.com", j))] = resource.MustParse("10")
		}
		counted := func() (int, error) {
			l, err := quotas.List(ctx, metav1.ListOptions{})
			if err != nil {
				return 0, err
			}
			n := 0
			for _, q := range l.Items {
				if used, _, _ := unstructured.NestedMap(q.Object, "status", "used"); len(used) > 0 {
					n++
				}
			}
			return n, nil
		}

		// The attack: a quota in every namespace at once.
		if err := parallel(namespaces, func(i int) error {
			_, err := att.kube.CoreV1().ResourceQuotas(fmt.Sprintf("ns-%d", i)).Create(ctx, &corev1.ResourceQuota{
				ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{})
			return err
		}); err != nil {
			t.Fatalf("creating the attacker's quotas: %v", err)
		}
		before, err := counted()
		if err != nil {
			t.Fatal(err)
		}
		if before > namespaces/2 {
			t.Fatalf("the attack built no backlog: %d of %d quotas already counted", before, namespaces)
		}

		// The victim's quota.
		if _, err := vic.Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/configmaps": resource.MustParse("5")}}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("victim's quota: %v", err)
		}
		eventually(t, 3*time.Minute, func() error {
			q, err := vic.Get(ctx, "q", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if _, ok := q.Status.Used["count/configmaps"]; !ok {
				return fmt.Errorf("victim's quota not counted yet: %+v", q.Status)
			}
			return nil
		})
		after, err := counted()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("attacker's quotas counted: %d when the victim created hers, %d when hers was counted (of %d)", before, after, namespaces)
		if after >= namespaces {
			t.Fatalf("the victim's quota was counted only after the controller got through all %d of the attacker's quotas", namespaces)
		}
	})
}

// TestAttackLimitsQueuesAggregation, r24:q3: an attacker's provider
// registers apiServices APIServices in her workspace (as resource-proxy
// does for each ResourceProxy) and then stops answering, so each
// availability check of hers waits out its discovery timeout; right
// after, a victim of another tenant registers an APIService of another
// provider. It is found Available while most of the attacker's are still
// waiting for their check. Before, one loop checked every APIService of
// every workspace in turn, so the victim's waited for all of hers.
func TestAttackLimitsQueuesAggregation(t *testing.T) {
	t.Parallel()
	const apiServices = 16
	ctx := context.Background()
	attBin := aggProbe(t, "q-slow")
	h := startHub(t, hubOptions{extraArgs: []string{
		"--token-auth-file", aggTokens(t),
		"--provider", "q-slow=" + attBin, "--provider", "q-fine=" + aggProbe(t, "q-fine"),
		// The supervisor must not restart the stopped provider meanwhile.
		"--provider-health-interval", "1h",
	}})
	h.createWorkspace("root", "agg-attacker")
	h.createWorkspace("root", "agg-victim")

	t.Run("r24:q3/a tenant's slow APIServices do not hold another tenant's availability check", func(t *testing.T) {
		h.enableProvider("root:agg-attacker", "q-slow")
		h.enableProvider("root:agg-victim", "q-fine")
		for i := 0; i < apiServices; i++ {
			path := fmt.Sprintf("/register?group=g%d.example.com", i)
			eventually(t, 60*time.Second, func() error {
				if code, body := h.backendAs(h.Token, "POST", "root:agg-attacker", "q-slow", path); code != 200 {
					return fmt.Errorf("register: %d %s", code, body)
				}
				return nil
			})
		}
		att := bgClientsFor(t, h, "root:agg-attacker").dyn.Resource(schema.GroupVersionResource{
			Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"})
		// Every one checked once (the probe answers 404 for those groups).
		var list *unstructured.UnstructuredList
		eventually(t, 2*time.Minute, func() error {
			var err error
			if list, err = att.List(ctx, metav1.ListOptions{}); err != nil {
				return err
			}
			checked := 0
			for i := range list.Items {
				if hasCondition(&list.Items[i], "Available", "False") {
					checked++
				}
			}
			if checked != apiServices {
				return fmt.Errorf("%d of %d APIServices checked", checked, apiServices)
			}
			return nil
		})
		rv := resourceVersions(list)

		// The attacker's provider stops answering.
		kids := pluginChildren(t, h.cmd.Process.Pid, attBin)
		if len(kids) != 1 {
			t.Fatalf("plugin processes: %v", kids)
		}
		if err := syscall.Kill(kids[0], syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = syscall.Kill(kids[0], syscall.SIGCONT) }()
		var before int
		eventually(t, 2*time.Minute, func() error {
			l, err := att.List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			if before = changedSince(rv, l); before == 0 {
				return fmt.Errorf("no APIService rechecked since the provider stopped")
			}
			return nil
		})
		if before > apiServices/2 {
			t.Fatalf("the attack built no backlog: %d of %d APIServices already rechecked", before, apiServices)
		}

		// The victim's APIService.
		h.registerProbe("root:agg-victim", "q-fine", false)
		eventually(t, 5*time.Minute, func() error {
			st, reason, err := h.apiServiceCondition("root:agg-victim")
			if err != nil || st != "True" {
				return fmt.Errorf("victim's APIService: %q %q %v", st, reason, err)
			}
			return nil
		})
		l, err := att.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		after := changedSince(rv, l)
		t.Logf("attacker's APIServices rechecked: %d when the victim registered, %d when hers was Available (of %d)", before, after, apiServices)
		if after >= apiServices {
			t.Fatalf("the victim's APIService was checked only after all %d of the attacker's", apiServices)
		}
	})
}
