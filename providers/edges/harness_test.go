package edges

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/providers/edges/protocol"
	"github.com/wharfhub/wharf/revdial"
	"github.com/wharfhub/wharf/sdk/clusters"
	"github.com/wharfhub/wharf/test/kube"
)

// The unit tests run the provider against a real kube-apiserver (test/kube)
// with the real CRD installed: its validation, resourceVersion conflicts and
// status subresource are the real ones. A plain kube-apiserver has no
// workspaces, so every "cluster" maps to it and the tests set the
// wharf.dev/cluster annotation the hub would set.
const testCluster = "c1"

var edgeCounter atomic.Int64

type env struct {
	t     *testing.T
	kube  *kube.Cluster
	res   dynamic.ResourceInterface
	p     *Provider
	clock *clocktesting.FakeClock
	srv   *httptest.Server
}

// allowAll lets every authenticated request through: these tests are about
// tokens and tunnels, not authorization (the egress code tests that against
// the real hub).
type allowAll struct{}

func (allowAll) Authorize(context.Context, *http.Request, string, string, string) error { return nil }
func (allowAll) AuthorizeNonResource(context.Context, *http.Request, string, string, string) error {
	return nil
}

func startKube(t *testing.T) *kube.Cluster {
	c := kube.Start(t, kube.Options{})
	c.ApplyYAML(t, string(crdYAML))
	return c
}

// newEnv starts a provider with a fake clock against k, served over TLS at
// the hub's backend prefix (so revdial's pickup paths resolve as on a hub).
func newEnv(t *testing.T, k *kube.Cluster, cfg Config) *env {
	t.Helper()
	dyn, err := dynamic.NewForConfig(k.Config())
	if err != nil {
		t.Fatal(err)
	}
	res := dyn.Resource(v1alpha1.GVR)
	fc := clocktesting.NewFakeClock(time.Now())
	p := New(Options{Clock: fc, Authorizer: allowAll{}})
	backend := p.Manifest().Backend
	mux := http.NewServeMux()
	mux.Handle(protocol.BackendPrefix+"/", http.StripPrefix(protocol.BackendPrefix, backend))
	srv := httptest.NewTLSServer(mux)
	t.Cleanup(srv.Close)
	if err := p.start(startParams{
		cfg: cfg, hubURL: "https://hub.example", authz: allowAll{}, all: res,
		clientFor: func(string) (dynamic.ResourceInterface, error) { return res, nil },
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	return &env{t: t, kube: k, res: res, p: p, clock: fc, srv: srv}
}

// createEdge creates an Edge with a name unique to the test run.
func (e *env) createEdge(typ v1alpha1.EdgeType) string {
	e.t.Helper()
	name := "e" + strings.ToLower(strings.ReplaceAll(e.t.Name(), "/", "-"))
	name = strings.ReplaceAll(name, "_", "-") + "-" + itoa(edgeCounter.Add(1))
	if len(name) > 60 {
		name = name[len(name)-60:]
		name = "e" + strings.TrimLeft(name, "-")
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": v1alpha1.Kind,
		"metadata": map[string]any{"name": name, "annotations": map[string]any{clusters.Annotation: testCluster}},
		"spec":     map[string]any{"type": string(typ)},
	}}
	if _, err := e.res.Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	return name
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

func (e *env) get(name string) *v1alpha1.Edge {
	e.t.Helper()
	ed, err := e.p.store.get(context.Background(), testCluster, name)
	if err != nil {
		e.t.Fatal(err)
	}
	return ed
}

func (e *env) url(path string) string { return e.srv.URL + protocol.BackendPrefix + path }

// post sends a JSON POST and returns the status code and body.
func (e *env) post(path string, body any) (int, []byte) {
	e.t.Helper()
	b, _ := json.Marshal(body)
	resp, err := e.srv.Client().Post(e.url(path), "application/json", bytes.NewReader(b))
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func (e *env) mintToken(name string) protocol.JoinTokenResponse {
	e.t.Helper()
	code, body := e.post(protocol.EgressBase(testCluster, name)+"/join-token", nil)
	if code != http.StatusOK {
		e.t.Fatalf("join-token: %d %s", code, body)
	}
	var r protocol.JoinTokenResponse
	if err := json.Unmarshal(body, &r); err != nil {
		e.t.Fatal(err)
	}
	return r
}

func (e *env) join(name, token string) (int, []byte) {
	e.t.Helper()
	return e.post(protocol.AgentBase(testCluster, name)+"/join", protocol.JoinRequest{Token: token})
}

func (e *env) joinOK(name string) string {
	e.t.Helper()
	code, body := e.join(name, e.mintToken(name).Token)
	if code != http.StatusOK {
		e.t.Fatalf("join: %d %s", code, body)
	}
	var r protocol.JoinResponse
	if err := json.Unmarshal(body, &r); err != nil || r.Credential == "" {
		e.t.Fatalf("join answer %s: %v", body, err)
	}
	return r.Credential
}

// agent is the agent side of one control tunnel, on real revdial, echoing
// every connection the provider dials through it.
type agent struct {
	l       *revdial.Listener
	rotated string
}

// connect opens the control websocket as an agent would. It returns the
// HTTP status when the provider refuses.
func (e *env) connect(name, cred string, hdr http.Header) (*agent, int) {
	e.t.Helper()
	base, _ := url.Parse(e.srv.URL)
	base.Scheme = "wss"
	control := *base
	control.Path = protocol.BackendPrefix + protocol.AgentBase(testCluster, name) + "/proxy"
	d := &websocket.Dialer{TLSClientConfig: e.srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone(), HandshakeTimeout: 10 * time.Second}
	if d.TLSClientConfig == nil {
		d.TLSClientConfig = &tls.Config{}
	}
	h := http.Header{}
	for k, v := range hdr {
		h[k] = v
	}
	h.Set("Authorization", "Bearer "+cred)
	if _, set := h[protocol.HeaderAgentType]; !set {
		// A real agent always names the type it serves.
		if edge, err := e.p.store.get(context.Background(), testCluster, name); err == nil {
			h.Set(protocol.HeaderAgentType, string(edge.Spec.Type))
		}
	}
	ws, resp, err := d.Dial(control.String(), h)
	if err != nil {
		if resp == nil {
			e.t.Fatal(err)
		}
		return nil, resp.StatusCode
	}
	open := func(ctx context.Context, connPath string) (*websocket.Conn, error) {
		ref, err := url.Parse(connPath)
		if err != nil {
			return nil, err
		}
		c, _, err := d.DialContext(ctx, base.ResolveReference(ref).String(), h)
		return c, err
	}
	a := &agent{l: revdial.NewListener(ws, open, revdial.Options{}), rotated: resp.Header.Get(protocol.HeaderRotatedCredential)}
	e.t.Cleanup(func() { a.l.Close() })
	go func() {
		for {
			c, err := a.l.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return a, resp.StatusCode
}

// eventually polls cond for up to a minute.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type kubeCluster = kube.Cluster

var errorsIs = errors.Is

// kubeREST is a REST client of the kube fixture, for raw requests.
func (e *env) kubeREST(t *testing.T) rest.Interface {
	cfg := rest.CopyConfig(e.kube.Config())
	cfg.GroupVersion = &schema.GroupVersion{}
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	c, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// metricValue reads one sample from the provider's registry.
func metricValue(t *testing.T, e *env, name, label, value string) float64 {
	t.Helper()
	mfs, err := e.p.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			ok := label == ""
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					ok = true
				}
			}
			if !ok {
				continue
			}
			switch {
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Counter != nil:
				return m.Counter.GetValue()
			}
		}
	}
	t.Fatalf("no metric %s{%s=%q}", name, label, value)
	return 0
}

func gaugeValue(t *testing.T, e *env, name string) float64 { return metricValue(t, e, name, "", "") }
func counterValue(t *testing.T, e *env, name, label, value string) float64 {
	return metricValue(t, e, name, label, value)
}

// rawControl opens the control websocket and does nothing with it: an
// agent that has gone silent.
func (e *env) rawControl(name, cred string) *websocket.Conn {
	e.t.Helper()
	u, _ := url.Parse(e.srv.URL)
	u.Scheme = "wss"
	u.Path = protocol.BackendPrefix + protocol.AgentBase(testCluster, name) + "/proxy"
	d := &websocket.Dialer{TLSClientConfig: e.srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()}
	h := http.Header{"Authorization": {"Bearer " + cred}}
	if edge, err := e.p.store.get(context.Background(), testCluster, name); err == nil {
		h.Set(protocol.HeaderAgentType, string(edge.Spec.Type))
	}
	ws, _, err := d.Dial(u.String(), h)
	if err != nil {
		e.t.Fatal(err)
	}
	return ws
}
