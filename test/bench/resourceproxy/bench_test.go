//go:build rpbench

package resourceproxy

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	rp "github.com/wharfhub/wharf/providers/resourceproxy"
	"github.com/wharfhub/wharf/providers/resourceproxy/targetpolicy"
	"github.com/wharfhub/wharf/test/kube"
)

const (
	cluster = "aaaaaaaaaaaaaaaa"
	path    = "root:bench:team-a"
	user    = "wharf:workspace:" + path
)

var gvr = schema.GroupVersionResource{Group: "databases.example.com", Version: "v1", Resource: "databases"}

const manifest = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: databases.databases.example.com}
spec:
  group: databases.example.com
  names: {plural: databases, singular: database, kind: Database}
  scope: Namespaced
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: rp}
rules:
- {apiGroups: [""], resources: [users], verbs: [impersonate], resourceNames: ["wharf:workspace:root:bench:team-a"]}
- {apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: [get, list, watch]}
- {apiGroups: [databases.example.com], resources: ["*"], verbs: ["*"]}
- {apiGroups: [""], resources: [namespaces], verbs: [create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: rp}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: rp}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: resource-proxy}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "wharf:workspace:root:bench:team-a"}
`

type secret []byte

func (s secret) Get(context.Context, string, string, string) (map[string][]byte, string, error) {
	return map[string][]byte{"kubeconfig": s}, "1", nil
}

type anyNS struct{}

func (anyNS) Exists(context.Context, string, string) (bool, error) { return true, nil }

type asHub struct{ rt http.RoundTripper }

func (a asHub) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Kedge-User", "alice")
	r.Header.Set("X-Kedge-Tenant", path)
	r.Header.Set("X-Kedge-Cluster", cluster)
	r.Header.Set(rp.HeaderOriginalPath, "/clusters/"+path+r.URL.Path)
	return a.rt.RoundTrip(r)
}

func obj(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "databases.example.com/v1", "kind": "Database",
		"metadata": map[string]any{"name": name, "labels": map[string]any{rp.OwnerClusterLabel: cluster, rp.OwnerWorkspaceLabel: "team-a"}},
		"spec":     map[string]any{"size": int64(1)}}}
}

func median(d []time.Duration) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

func timeN(n int, f func(i int) error) (time.Duration, error) {
	var d []time.Duration
	for i := range n {
		s := time.Now()
		if err := f(i); err != nil {
			return 0, err
		}
		d = append(d, time.Since(s))
	}
	return median(d), nil
}

var once sync.Once

func BenchmarkResourceProxy(b *testing.B) {
	once.Do(func() { run(b) })
}

func run(b *testing.B) {
	c := kube.Start(b, kube.Options{Replicas: 2, Users: []kube.User{{Name: "resource-proxy"}}})
	c.ApplyYAML(b, manifest)
	kc, err := os.ReadFile(c.WriteKubeconfig(b, "rp", c.UserConfig(b, "resource-proxy")))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := rp.NewMetrics()
	routes := rp.NewRoutes()
	routes.Set(cluster, map[string]*rp.Route{"databases.example.com/v1": {Cluster: cluster, Group: gvr.Group, Version: "v1", Mode: rp.AccessOwned,
		Resources: []string{"databases"}, Target: rp.Target{External: &rp.External{Name: "bench", SecretRef: rp.SecretRef{Namespace: "ops", Name: "kc"}}}}})
	h := rp.NewHandler(routes, rp.NewTargets(ctx, nil, secret(kc), clock.RealClock{}, m, loopbackPolicy(b)), anyNS{}, m, clock.RealClock{})
	front := httptest.NewServer(h)
	defer front.Close()
	via, _ := dynamic.NewForConfig(&rest.Config{Host: front.URL, QPS: -1, WrapTransport: func(rt http.RoundTripper) http.RoundTripper { return asHub{rt} }})
	dcfg := c.UserConfig(b, "resource-proxy")
	dcfg.Impersonate.UserName, dcfg.QPS = user, -1
	direct, _ := dynamic.NewForConfig(dcfg)
	proxied, straight := via.Resource(gvr).Namespace("bench"), direct.Resource(gvr).Namespace("bench")
	if _, err := proxied.Create(ctx, obj("warm"), metav1.CreateOptions{}); err != nil { // creates the namespace
		b.Fatal(err)
	}
	for i := range 1000 {
		if _, err := straight.Create(ctx, obj(fmt.Sprintf("o%04d", i)), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	report := func(what string, n int, fp, fd func(i int) error) {
		tp, err := timeN(n, fp)
		if err != nil {
			b.Fatalf("%s via proxy: %v", what, err)
		}
		td, err := timeN(n, fd)
		if err != nil {
			b.Fatalf("%s direct: %v", what, err)
		}
		fmt.Printf("resource-proxy bench: %-22s proxy %-10v direct %-10v ratio %.2fx (goal ≤ 1.2x)\n", what, tp, td, float64(tp)/float64(td))
	}
	report("get", 200, func(int) error { _, err := proxied.Get(ctx, "o0001", metav1.GetOptions{}); return err },
		func(int) error { _, err := straight.Get(ctx, "o0001", metav1.GetOptions{}); return err })
	report("list (1,000 objects)", 15, func(int) error { _, err := proxied.List(ctx, metav1.ListOptions{}); return err },
		func(int) error {
			_, err := straight.List(ctx, metav1.ListOptions{LabelSelector: rp.OwnerClusterLabel + "=" + cluster})
			return err
		})
	report("create", 200, func(i int) error {
		_, err := proxied.Create(ctx, obj(fmt.Sprintf("p%04d", i)), metav1.CreateOptions{})
		return err
	},
		func(i int) error {
			_, err := straight.Create(ctx, obj(fmt.Sprintf("d%04d", i)), metav1.CreateOptions{})
			return err
		})

	// Fan-out: 100 watchers through the proxy, one create, time until all
	// saw it.
	l, _ := proxied.List(ctx, metav1.ListOptions{Limit: 1})
	var wg sync.WaitGroup
	ready := make(chan struct{}, 100)
	start := make(chan time.Time, 1)
	var mu sync.Mutex
	var lat []time.Duration
	for range 100 {
		w, err := proxied.Watch(ctx, metav1.ListOptions{ResourceVersion: l.GetResourceVersion()})
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.Stop()
			ready <- struct{}{}
			for ev := range w.ResultChan() {
				if u, ok := ev.Object.(*unstructured.Unstructured); ok && u.GetName() == "fanout" {
					s := <-start
					start <- s
					mu.Lock()
					lat = append(lat, time.Since(s))
					mu.Unlock()
					return
				}
			}
		}()
	}
	for range 100 {
		<-ready
	}
	start <- time.Now()
	if _, err := proxied.Create(ctx, obj("fanout"), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	wg.Wait()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	fmt.Printf("resource-proxy bench: watch fan-out         100 watchers, event seen by all in %v (median %v)\n", lat[len(lat)-1], lat[len(lat)/2])

	// Every peer quarantined: stop both replicas and drive the three
	// failed dials per peer, then time the 503.
	_ = c.StopReplica(1)
	_ = c.StopReplica(0)
	hc := &http.Client{Transport: asHub{http.DefaultTransport}}
	get := func() int {
		resp, err := hc.Get(front.URL + "/apis/databases.example.com/v1/namespaces/bench/databases/o0001")
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for range 10 {
		get()
	}
	t503, _ := timeN(200, func(int) error {
		if code := get(); code != 503 {
			return fmt.Errorf("code %d", code)
		}
		return nil
	})
	fmt.Printf("resource-proxy bench: 503 while quarantined median %v (goal ≤ 5ms)\n", t503)
}

// loopbackPolicy is the target policy of tests whose targets listen on
// loopback: the operator's allowCIDRs, said explicitly (the built-in
// policy refuses loopback).
func loopbackPolicy(t testing.TB) *targetpolicy.Policy {
	t.Helper()
	p, err := targetpolicy.New(context.Background(), targetpolicy.Config{AllowCIDRs: []string{"127.0.0.0/8", "::1/128"}}, targetpolicy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
