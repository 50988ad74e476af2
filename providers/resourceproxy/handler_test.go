package resourceproxy

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wharfhub/wharf/providers/resourceproxy/targetpolicy"
)

type oneSecret []byte

func (s oneSecret) Get(context.Context, string, string, string) (map[string][]byte, string, error) {
	return map[string][]byte{"kubeconfig": s}, "1", nil
}

type allNamespaces struct{}

func (allNamespaces) Exists(context.Context, string, string) (bool, error) { return true, nil }

// tlsTarget is a real TLS HTTP server standing for a target whose
// behaviour a kube-apiserver cannot be made to show on demand: a list that
// never answers, and 5xx.
func tlsTarget(t *testing.T) (*httptest.Server, []byte) {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.Contains(r.URL.Path, "endpointslices"):
			http.Error(w, `{"kind":"Status","code":404}`, http.StatusNotFound)
		case r.URL.Path == "/apis/g.example.com/v1/namespaces/ns/hangs":
			<-r.Context().Done()
		case strings.HasPrefix(r.URL.Path, "/apis/g.example.com/v1"):
			http.Error(w, `{"kind":"Status","code":500}`, http.StatusInternalServerError)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["t"] = &clientcmdapi.Cluster{Server: srv.URL, CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "not-a-secret"}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "t", AuthInfo: "u"}
	kc.CurrentContext = "c"
	b, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return srv, b
}

func testHandler(t *testing.T, kc []byte) (*Handler, *clocktesting.FakeClock, *Metrics) {
	clk := clocktesting.NewFakeClock(time.Now())
	m := NewMetrics()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	routes := NewRoutes()
	routes.Set("c1", map[string]*Route{"g.example.com/v1": {Cluster: "c1", Group: "g.example.com", Version: "v1", Mode: AccessOwned,
		Resources: []string{"things"}, Target: Target{External: &External{Name: "t1", SecretRef: SecretRef{Namespace: "ops", Name: "kc"}}}}})
	return NewHandler(routes, NewTargets(ctx, nil, oneSecret(kc), clk, m, loopbackPolicy(t)), allNamespaces{}, m, clk), clk, m
}

func aggregated(method, path string) *http.Request {
	r := httptest.NewRequest(method, path, nil)
	r.Header.Set("X-Kedge-User", "alice")
	r.Header.Set("X-Kedge-Tenant", "root:a")
	r.Header.Set("X-Kedge-Cluster", "c1")
	r.Header.Set(HeaderOriginalPath, "/clusters/root:a"+path)
	return r
}

// TestRequestCap drives the 60 s cap with the fake clock: a list the
// target never answers ends with 503 reason deadline, not a hang.
func TestRequestCap(t *testing.T) {
	_, kc := tlsTarget(t)
	h, clk, m := testHandler(t, kc)
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(rec, aggregated(http.MethodGet, "/apis/g.example.com/v1/namespaces/ns/hangs"))
	}()
	for {
		select {
		case <-done:
			if rec.Code != 503 || rec.Header().Get("Retry-After") != "1" || !strings.Contains(rec.Body.String(), `target \"t1\" for g.example.com/v1 is unavailable`) {
				t.Fatalf("got %d %q %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
			}
			if got := testutilCounter(t, m, "wharf_resource_proxy_requests_total", "deadline"); got != 1 {
				t.Fatalf("deadline requests = %v", got)
			}
			return
		case <-time.After(20 * time.Millisecond):
			if clk.HasWaiters() {
				clk.Step(RequestTimeout)
			}
		}
	}
}

// TestTarget5xx: non-watch 5xx become the 503; discovery falls back.
func TestTarget5xx(t *testing.T) {
	_, kc := tlsTarget(t)
	h, _, m := testHandler(t, kc)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, aggregated(http.MethodGet, "/apis/g.example.com/v1/namespaces/ns/things"))
	if rec.Code != 503 || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("list on a 500 target: %d %s", rec.Code, rec.Body)
	}
	if got := testutilCounter(t, m, "wharf_resource_proxy_requests_total", "upstream_error"); got != 1 {
		t.Fatalf("upstream_error requests = %v", got)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, aggregated(http.MethodGet, "/apis/g.example.com/v1"))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"name":"things","singularName":"thing","namespaced":true,"kind":"Thing","verbs":["get"]`) {
		t.Fatalf("discovery on a 500 target: %d %s", rec.Code, rec.Body)
	}
	if got := testutilCounter(t, m, "wharf_resource_proxy_discovery_fallbacks_total", "upstream"); got != 1 {
		t.Fatalf("fallbacks = %v", got)
	}
	// Without the hub's header the same request is not served.
	r := aggregated(http.MethodGet, "/apis/g.example.com/v1/namespaces/ns/things")
	r.Header.Del(HeaderOriginalPath)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != 404 {
		t.Fatalf("without %s: %d", HeaderOriginalPath, rec.Code)
	}
}

func testutilCounter(t *testing.T, m *Metrics, name, reason string) float64 {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					sum += s.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

func TestKubeconfigRefusals(t *testing.T) {
	base := func() *clientcmdapi.Config {
		kc := clientcmdapi.NewConfig()
		kc.Clusters["t"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443"}
		kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "x"}
		kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "t", AuthInfo: "u"}
		kc.CurrentContext = "c"
		return kc
	}
	for name, mut := range map[string]func(*clientcmdapi.Config){
		"exec":          func(k *clientcmdapi.Config) { k.AuthInfos["u"].Exec = &clientcmdapi.ExecConfig{Command: "/bin/sh"} },
		"token file":    func(k *clientcmdapi.Config) { k.AuthInfos["u"].TokenFile = "/etc/shadow" },
		"ca file":       func(k *clientcmdapi.Config) { k.Clusters["t"].CertificateAuthority = "/etc/ssl/x.pem" },
		"insecure":      func(k *clientcmdapi.Config) { k.Clusters["t"].InsecureSkipTLSVerify = true },
		"impersonation": func(k *clientcmdapi.Config) { k.AuthInfos["u"].Impersonate = "system:admin" },
		"proxy":         func(k *clientcmdapi.Config) { k.Clusters["t"].ProxyURL = "http://evil:3128" },
	} {
		kc := base()
		mut(kc)
		b, _ := clientcmd.Write(*kc)
		if _, err := KubeconfigConfig(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	b, _ := clientcmd.Write(*base())
	if _, err := KubeconfigConfig(b); err != nil {
		t.Errorf("plain kubeconfig refused: %v", err)
	}
}

// loopbackPolicy is the target policy of tests whose targets listen on
// loopback: the operator's allowCIDRs, said explicitly.
func loopbackPolicy(t testing.TB) *targetpolicy.Policy {
	t.Helper()
	p, err := targetpolicy.New(context.Background(), targetpolicy.Config{AllowCIDRs: []string{"127.0.0.0/8", "::1/128"}}, targetpolicy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
