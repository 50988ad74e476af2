package edges

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/revdial"
	"github.com/wharfhub/wharf/sdk"
)

// tunnelHub is the provider side of a real revdial tunnel: a TLS server with
// the control path /control/{cluster}/{name} and pickups under /pickup/,
// registering dialers under "<cluster>/<name>".
type tunnelHub struct {
	t   *testing.T
	srv *revdial.Server
	ts  *httptest.Server
}

func testOptions() revdial.Options {
	return revdial.Options{
		KeepAliveInterval: time.Second, ReadDeadline: 30 * time.Second,
		PickupWait: 30 * time.Second, HandshakeTimeout: 30 * time.Second, WriteTimeout: 10 * time.Second,
	}
}

func newTunnelHub(t *testing.T) *tunnelHub {
	t.Helper()
	srv := revdial.NewServer("/pickup", testOptions())
	mux := http.NewServeMux()
	mux.HandleFunc("/control/{cluster}/{name}", func(w http.ResponseWriter, r *http.Request) {
		if _, err := srv.Upgrade(w, r, r.PathValue("cluster")+"/"+r.PathValue("name")); err != nil {
			t.Logf("control upgrade: %v", err)
		}
	})
	mux.Handle("/pickup/", srv)
	ts := httptest.NewTLSServer(mux)
	t.Cleanup(func() { _ = srv.Close(); ts.Close() })
	return &tunnelHub{t: t, srv: srv, ts: ts}
}

func (h *tunnelHub) tunnel(cluster, name string) (Tunnel, bool) {
	d, ok := h.srv.Dialer(cluster + "/" + name)
	if !ok {
		return nil, false
	}
	return d, true
}

// agent connects an agent for cluster/name and returns its listener; it
// waits until the provider side has registered the tunnel.
func (h *tunnelHub) agent(cluster, name string) *revdial.Client {
	h.t.Helper()
	tlsCfg := h.ts.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	cl, err := revdial.NewClient(revdial.ClientConfig{
		URL:       "wss://" + strings.TrimPrefix(h.ts.URL, "https://") + "/control/" + cluster + "/" + name,
		TLSConfig: tlsCfg,
		Options:   testOptions(),
		Backoff:   revdial.Backoff{Base: 50 * time.Millisecond, Max: time.Second},
	})
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = cl.Run(ctx) }()
	h.t.Cleanup(func() { cancel(); <-done })
	waitFor(h.t, 30*time.Second, func() bool { _, ok := h.tunnel(cluster, name); return ok })
	return cl
}

func waitFor(t *testing.T, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tableAuthorizer allows exactly the listed "user cluster/name verb"
// triples. The handler tests use it to check the handler's order of checks;
// the hub's real decisions are tested in authz_hub_test.go.
type tableAuthorizer struct {
	allow map[string]bool
	calls atomic.Int32
}

func (a *tableAuthorizer) Authorize(_ context.Context, r *http.Request, cluster, name, verb string) error {
	a.calls.Add(1)
	id, _ := sdk.IdentityFrom(r)
	if a.allow[id.User+" "+cluster+"/"+name+" "+verb] {
		return nil
	}
	return forbiddenEdge(id.User, name, verb)
}

// byteMetrics sums TunnelBytes.
type byteMetrics struct {
	mu sync.Mutex
	n  map[string]int
}

func (m *byteMetrics) TunnelBytes(typ v1alpha1.EdgeType, dir string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n == nil {
		m.n = map[string]int{}
	}
	m.n[string(typ)+" "+dir] += n
}

func (m *byteMetrics) get(k string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n[k]
}

// edgeStore is the provider's cache of Edges, keyed by cluster and name.
type edgeStore map[string]*v1alpha1.Edge

func (s edgeStore) get(cluster, name string) (*v1alpha1.Edge, bool) {
	e, ok := s[cluster+"/"+name]
	return e, ok
}

func edgeOf(typ v1alpha1.EdgeType) *v1alpha1.Edge {
	return &v1alpha1.Edge{Spec: v1alpha1.EdgeSpec{Type: typ}}
}

// providerServer serves the egress like the plugin socket does: plain HTTP
// reached only by the hub, which asserts identity in X-Kedge-* headers.
func providerServer(t *testing.T, e *Egress) *httptest.Server {
	t.Helper()
	ps := httptest.NewServer(e)
	t.Cleanup(ps.Close)
	return ps
}

// asHub returns a request as the hub would forward it for id.
func asHub(t *testing.T, method, url string, id sdk.Identity) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	sdk.SetIdentity(req.Header, id)
	return req
}

func (a *tableAuthorizer) AuthorizeNonResource(_ context.Context, r *http.Request, _, path, verb string) error {
	id, _ := sdk.IdentityFrom(r)
	return forbiddenEdge(id.User, path, verb)
}
