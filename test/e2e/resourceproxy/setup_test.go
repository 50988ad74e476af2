package resourceproxy

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	rp "github.com/wharfhub/wharf/providers/resourceproxy"
	"github.com/wharfhub/wharf/providers/resourceproxy/targetpolicy"
	"github.com/wharfhub/wharf/test/kube"
)

// The provider's credential on the external target and the client
// workspaces of the tests.
const (
	providerUser = "resource-proxy"
	group        = "databases.example.com"
	targetName   = "prod"
)

var dbGVR = schema.GroupVersionResource{Group: group, Version: "v1", Resource: "databases"}

// client is a client workspace: logical cluster id and path.
type client struct{ id, path string }

var (
	teamA   = client{"aaaaaaaaaaaaaaaa", "root:acme:team-a"}
	teamB   = client{"bbbbbbbbbbbbbbbb", "root:acme:team-b"}
	teamC   = client{"cccccccccccccccc", "root:acme:team-c"} // update without get
	teamD   = client{"dddddddddddddddd", "root:acme:team-d"} // no grant on the target
	teamAll = client{"eeeeeeeeeeeeeeee", "root:acme:ops"}    // mode all
)

// targetManifest is the target's CRD and RBAC: the provider may
// impersonate exactly the client users named here and read the kubernetes
// EndpointSlice; the clients get what each test needs.
const targetManifest = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: databases.databases.example.com}
spec:
  group: databases.example.com
  names: {plural: databases, singular: database, kind: Database, listKind: DatabaseList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: resource-proxy-impersonate}
rules:
- apiGroups: [""]
  resources: [users]
  verbs: [impersonate]
  resourceNames: ["wharf:workspace:root:acme:team-a", "wharf:workspace:root:acme:team-b", "wharf:workspace:root:acme:team-c", "wharf:workspace:root:acme:team-d", "wharf:workspace:root:acme:ops", "wharf:workspace:root:acme:team-f"]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: resource-proxy-impersonate}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: resource-proxy-impersonate}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: resource-proxy}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: databases-editor}
rules:
- apiGroups: [databases.example.com]
  resources: ["*"]
  verbs: ["*"]
- apiGroups: [""]
  resources: [namespaces]
  verbs: [create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: databases-editors}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: databases-editor}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "wharf:workspace:root:acme:team-a"}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "wharf:workspace:root:acme:team-b"}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "wharf:workspace:root:acme:ops"}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: databases-updater-no-get}
rules:
- apiGroups: [databases.example.com]
  resources: [databases]
  verbs: [create, update, patch, delete, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: databases-updater-no-get}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: databases-updater-no-get}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "wharf:workspace:root:acme:team-c"}
`

// env is a running target and the proxy in front of it.
type env struct {
	t       *testing.T
	kube    *kube.Cluster
	clock   *clocktesting.FakeClock
	routes  *rp.Routes
	metrics *rp.Metrics
	ns      *namespaces
	secrets *secrets
	front   *httptest.Server
}

// startEnv starts a two-replica target (a fresh one: peer tests stop
// replicas) and the proxy.
func startEnv(t *testing.T) *env {
	t.Helper()
	c := startKube(t)
	e := &env{t: t, kube: c, clock: clocktesting.NewFakeClock(time.Now()), routes: rp.NewRoutes(), metrics: rp.NewMetrics(),
		ns: &namespaces{m: map[string]bool{}}, secrets: &secrets{m: map[string][]byte{}}}
	kc, err := os.ReadFile(c.WriteKubeconfig(t, "resource-proxy", c.UserConfig(t, providerUser)))
	if err != nil {
		t.Fatal(err)
	}
	e.secrets.put("ops", "prod", kc)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	targets := rp.NewTargets(ctx, nil, e.secrets, e.clock, e.metrics, loopbackPolicy(t))
	e.metrics.WatchPeers(e.routes, targets)
	h := rp.NewHandler(e.routes, targets, e.ns, e.metrics, e.clock)
	e.front = httptest.NewServer(h)
	t.Cleanup(e.front.Close)
	for _, cl := range []client{teamA, teamB, teamC, teamD} {
		e.route(cl, rp.AccessOwned, "databases")
	}
	e.route(teamAll, rp.AccessAll, "databases")
	return e
}

// startKube starts the two-replica target with its CRD and RBAC.
func startKube(t *testing.T) *kube.Cluster {
	t.Helper()
	c := kube.Start(t, kube.Options{Replicas: 2, Users: []kube.User{{Name: providerUser}}})
	c.ApplyYAML(t, targetManifest)
	return c
}

// route makes cl's databases.example.com/v1 go to the external target, as
// the controller would from a ResourceProxy.
func (e *env) route(cl client, mode rp.AccessMode, resources ...string) {
	e.routes.Set(cl.id, map[string]*rp.Route{group + "/v1": {
		Cluster: cl.id, Group: group, Version: "v1", Mode: mode, Resources: resources, Proxy: "databases",
		Target: rp.Target{External: &rp.External{Name: targetName, SecretRef: rp.SecretRef{Namespace: "ops", Name: "prod"}}},
	}})
}

// config is a rest config reaching the proxy as the hub's aggregation
// route would call it for a user of cl.
func (e *env) config(cl client) *rest.Config {
	return &rest.Config{Host: e.front.URL, WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
		return asHub{rt: rt, cl: cl}
	}}
}

func (e *env) dyn(cl client) dynamic.NamespaceableResourceInterface {
	d, err := dynamic.NewForConfig(e.config(cl))
	if err != nil {
		e.t.Fatal(err)
	}
	return d.Resource(dbGVR)
}

// asHub sets what the hub's aggregation route sets.
type asHub struct {
	rt http.RoundTripper
	cl client
}

func (a asHub) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Kedge-User", "alice@"+a.cl.path)
	r.Header.Set("X-Kedge-Groups", "system:authenticated")
	r.Header.Set("X-Kedge-Tenant", a.cl.path)
	r.Header.Set("X-Kedge-Cluster", a.cl.id)
	r.Header.Set(rp.HeaderOriginalPath, "/clusters/"+a.cl.path+r.URL.Path)
	return a.rt.RoundTrip(r)
}

// namespaces are the client workspaces' namespaces, "<cluster>/<ns>".
type namespaces struct {
	mu sync.Mutex
	m  map[string]bool
}

func (n *namespaces) add(cl client, ns string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.m[cl.id+"/"+ns] = true
}

func (n *namespaces) Exists(_ context.Context, cluster, ns string) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.m[cluster+"/"+ns], nil
}

// secrets are kubeconfig Secrets of the client workspaces (any cluster).
type secrets struct {
	mu sync.Mutex
	m  map[string][]byte
	rv int
}

func (s *secrets) put(ns, name string, kc []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[ns+"/"+name] = kc
	s.rv++
}

func (s *secrets) Get(_ context.Context, _, ns, name string) (map[string][]byte, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kc, ok := s.m[ns+"/"+name]
	if !ok {
		return nil, "", fmt.Errorf("secret %s/%s not found", ns, name)
	}
	return map[string][]byte{"kubeconfig": kc}, fmt.Sprint(s.rv), nil
}

// metric returns the value of the series name whose labels include want
// (a counter, gauge, or a histogram's sample count), summed over matches.
func (e *env) metric(name string, want map[string]string) float64 {
	e.t.Helper()
	mfs, err := e.metrics.Registry.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if !labelsMatch(m, want) {
				continue
			}
			switch {
			case m.Counter != nil:
				sum += m.GetCounter().GetValue()
			case m.Gauge != nil:
				sum += m.GetGauge().GetValue()
			case m.Histogram != nil:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}

func labelsMatch(m *dto.Metric, want map[string]string) bool {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// eventually polls f until it returns nil, generously.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	// Generous: after both kube-apiserver replicas restart, the peer
	// watch's backoff and a loaded machine made 90 s too short once in
	// make test (TestPeerHealth recovery); this bounds a failure only.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func ownerSelector(cl client) string {
	seg := cl.path[strings.LastIndex(cl.path, ":")+1:]
	return rp.OwnerClusterLabel + "=" + cl.id + "," + rp.OwnerWorkspaceLabel + "=" + seg
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
