package tenantfilterbench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"golang.org/x/sync/errgroup"

	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
	"github.com/wharfhub/wharf/providers/tenantfilter/crds"
	"github.com/wharfhub/wharf/test/kube"
)

var (
	flagTenants   = flag.Int("tenants", 500, "tenants")
	flagPerTenant = flag.Int("per-tenant", 10, "namespaces per tenant")
	flagRequests  = flag.Int("requests", 300, "requests per latency series")
)

const capsuleGroup = "projectcapsule.dev"

// BenchmarkTenantFilter prints the table described in the package doc.
func BenchmarkTenantFilter(b *testing.B) {
	if os.Getenv("WHARF_BENCH_TENANTFILTER") != "1" {
		b.Skip("set WHARF_BENCH_TENANTFILTER=1 (make bench does) to run the tenant filter benchmark")
	}
	binDir := os.Getenv("WHARF_BIN_DIR")
	if binDir == "" {
		root, err := kube.RepoRoot()
		if err != nil {
			b.Fatal(err)
		}
		binDir = filepath.Join(root, "bin")
	}
	bin := filepath.Join(binDir, "wharf-provider-tenant-filter")
	if _, err := os.Stat(bin); err != nil {
		b.Fatalf("%v (run make build)", err)
	}
	for b.Loop() {
		run(b, bin)
	}
}

func groupsOf(n int) []string {
	g := []string{capsuleGroup}
	for i := range n - 1 {
		g = append(g, fmt.Sprintf("bench-g-%03d", i))
	}
	return g
}

func run(b *testing.B, bin string) {
	users := []kube.User{
		{Name: "owner-000", Groups: []string{capsuleGroup}},
		{Name: "groupie", Groups: groupsOf(200)},
		{Name: "cold", Groups: []string{capsuleGroup}},
	}
	fx := kube.Start(b, kube.Options{Users: users})
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	admin := fx.Config()
	admin.QPS, admin.Burst = -1, 0
	if err := crds.Apply(ctx, admin); err != nil {
		b.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(admin)
	dyn := dynamic.NewForConfigOrDie(admin)
	if err := capsuleConfiguration(ctx, dyn); err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	if err := populate(ctx, cs, dyn, *flagTenants, *flagPerTenant); err != nil {
		b.Fatal(err)
	}
	fmt.Printf("populated %d tenants, %d namespaces in %s\n", *flagTenants, *flagTenants**flagPerTenant, time.Since(t0).Round(time.Second))

	p, err := startProxy(bin, b.TempDir(), fx.Kubeconfig())
	if err != nil {
		b.Fatal(err)
	}
	defer p.stop()
	proxyCfg := func(user string) *rest.Config {
		return &rest.Config{Host: p.url, BearerToken: fx.Token(b, user), QPS: -1, TLSClientConfig: rest.TLSClientConfig{CAData: p.caPEM}}
	}
	owner := kubernetes.NewForConfigOrDie(proxyCfg("owner-000"))
	groupie := kubernetes.NewForConfigOrDie(proxyCfg("groupie"))

	// Warm: the proxy's caches, and its status controller's one-off writes
	// of 500 tenant statuses, which would otherwise count as background.
	if err := waitStatuses(ctx, dyn, *flagTenants, *flagPerTenant); err != nil {
		b.Fatal(err)
	}
	for _, c := range []kubernetes.Interface{owner, groupie} {
		for range 10 {
			if l, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != *flagPerTenant {
				b.Fatalf("warm-up list: %d items, %v (log %s)", lenItems(l), err, p.logPath)
			}
		}
	}

	selector := "kubernetes.io/metadata.name in (" + strings.Join(tenantNamespaces(0, *flagPerTenant), ",") + ")"
	n := *flagRequests
	direct := series(ctx, n, func() error { _, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); return err })
	directSel := series(ctx, n, func() error {
		_, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: selector})
		return err
	})

	rate, err := backgroundRate(ctx, cs, 10*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	before, err := scrape(ctx, cs)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	viaOwner := series(ctx, n, func() error { _, err := owner.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); return err })
	elapsed := time.Since(start)
	after, err := scrape(ctx, cs)
	if err != nil {
		b.Fatal(err)
	}
	d := after.sub(before)
	calls := (d.total - rate.total*elapsed.Seconds()) / float64(n)

	viaGroupie := series(ctx, n, func() error { _, err := groupie.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); return err })

	// A first request with a token the proxy has not seen.
	cb, _ := scrape(ctx, cs)
	cold := kubernetes.NewForConfigOrDie(proxyCfg("cold"))
	if _, err := cold.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
		b.Fatal(err)
	}
	ca, _ := scrape(ctx, cs)
	coldD := ca.sub(cb)

	rss, err := rssKB(p.cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range []*latencies{direct, directSel, viaOwner, viaGroupie} {
		if s.err != nil {
			b.Fatalf("series: %v", s.err)
		}
	}
	report(os.Stdout, reportData{
		tenants: *flagTenants, namespaces: *flagTenants * *flagPerTenant, requests: n,
		direct: direct, directSel: directSel, owner: viaOwner, groupie: viaGroupie,
		callsPerReq: calls, tokenReviewsPerReq: d.tokenReviews / float64(n), rawDelta: d.total,
		background: rate.total * elapsed.Seconds(), deltaTop: d.top(4), coldCalls: coldD.total, coldTokenReviews: coldD.tokenReviews, rssKB: rss,
	})
}

func lenItems(l *corev1.NamespaceList) int {
	if l == nil {
		return 0
	}
	return len(l.Items)
}

func tenantName(i int) string { return fmt.Sprintf("t-%03d", i) }

func tenantNamespaces(i, per int) []string {
	out := make([]string, per)
	for j := range per {
		out[j] = fmt.Sprintf("%s-ns-%02d", tenantName(i), j)
	}
	return out
}

// populate creates the tenants (t-000 owned by owner-000, t-001 by the
// group bench-g-198 of groupie, the rest by users without tokens) and
// their namespaces, labelled as Capsule labels them.
func populate(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, tenants, per int) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range tenants {
		g.Go(func() error {
			owner := map[string]any{"kind": "User", "name": fmt.Sprintf("owner-%03d", i)}
			if i == 1 {
				owner = map[string]any{"kind": "Group", "name": "bench-g-198"}
			}
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": capsulev1beta2.SchemeGroupVersion.String(), "kind": "Tenant",
				"metadata": map[string]any{"name": tenantName(i)},
				"spec":     map[string]any{"owners": []any{owner}},
			}}
			if _, err := dyn.Resource(capsulev1beta2.TenantsGVR).Create(gctx, u, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("tenant %d: %w", i, err)
			}
			for _, n := range tenantNamespaces(i, per) {
				ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{capsulev1beta2.TenantLabel: tenantName(i)}}}
				if _, err := cs.CoreV1().Namespaces().Create(gctx, ns, metav1.CreateOptions{}); err != nil {
					return fmt.Errorf("namespace %s: %w", n, err)
				}
			}
			return nil
		})
	}
	return g.Wait()
}

func capsuleConfiguration(ctx context.Context, dyn dynamic.Interface) error {
	res := dyn.Resource(capsulev1beta2.CapsuleConfigurationsGVR)
	users := []any{map[string]any{"kind": "Group", "name": capsuleGroup}}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": capsulev1beta2.SchemeGroupVersion.String(), "kind": "CapsuleConfiguration",
		"metadata": map[string]any{"name": "default"}, "spec": map[string]any{"users": users},
	}}
	u, err := res.Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	u.Object["status"] = map[string]any{"users": users}
	_, err = res.UpdateStatus(ctx, u, metav1.UpdateOptions{})
	return err
}

// waitStatuses waits until the proxy's status controller has written the
// first and last tenants' statuses (it writes them all once at start).
func waitStatuses(ctx context.Context, dyn dynamic.Interface, tenants, per int) error {
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		done := true
		for _, i := range []int{0, tenants - 1} {
			u, err := dyn.Resource(capsulev1beta2.TenantsGVR).Get(ctx, tenantName(i), metav1.GetOptions{})
			if err != nil {
				return err
			}
			if size, _, _ := unstructured.NestedInt64(u.Object, "status", "size"); size != int64(per) {
				done = false
			}
		}
		if done {
			time.Sleep(2 * time.Second) // let the queue drain the middle ones
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("tenant statuses not written within 5m")
}

func scrape(ctx context.Context, cs kubernetes.Interface) (requestCounts, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return requestCounts{}, fmt.Errorf("scrape /metrics: %w", err)
	}
	return parseRequestTotals(string(raw))
}

// backgroundRate is the kube-apiserver's resource requests per second with
// no benchmark traffic (its own leases, the proxy's idle informers).
func backgroundRate(ctx context.Context, cs kubernetes.Interface, window time.Duration) (requestCounts, error) {
	a, err := scrape(ctx, cs)
	if err != nil {
		return a, err
	}
	time.Sleep(window)
	z, err := scrape(ctx, cs)
	if err != nil {
		return z, err
	}
	d := z.sub(a)
	s := window.Seconds()
	return requestCounts{total: d.total / s, tokenReviews: d.tokenReviews / s}, nil
}
