package tenantfilter

import (
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/wharfhub/wharf/providers/tenantfilter/core"
	"github.com/wharfhub/wharf/test/kube"
)

// The grants engine's scenarios run against a target: the real standalone
// binary when cmd/wharf-provider-tenant-filter exists, else the filtering
// core in process behind a test front end that maps the fixture's static
// tokens to their users (authentication is the front end's job and is
// tested with it; these tests are about what the core grants).
type target interface {
	Do(t testing.TB, user, method, path string, body string, header http.Header) (int, string)
	Kubectl(t testing.TB, user string, args ...string) (string, error)
	Dynamic(t testing.TB, user string) dynamic.Interface
}

// grantsOptions are the options the grants scenarios vary.
type grantsOptions struct {
	ClusterScoped        bool // --feature-gates=ProxyClusterScoped=true
	NoRequireCapsuleUser bool // --require-capsule-user=false
	AllNamespaced        bool // --feature-gates=ProxyAllNamespaced=true
}

func (o grantsOptions) args() []string {
	var gates []string
	if o.ClusterScoped {
		gates = append(gates, core.GateProxyClusterScoped+"=true")
	}
	if o.AllNamespaced {
		gates = append(gates, core.GateProxyAllNamespaced+"=true")
	}
	var args []string
	if len(gates) > 0 {
		args = append(args, "--feature-gates="+strings.Join(gates, ","))
	}
	if o.NoRequireCapsuleUser {
		args = append(args, "--require-capsule-user=false")
	}
	return args
}

func startGrantsTarget(t *testing.T, o grantsOptions) target {
	t.Helper()
	root, err := kube.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", proxyBinaryName, "main.go")); err == nil {
		return startProxy(t, proxyOptions{TLS: true, Args: o.args()})
	}
	return startInProcess(t, o)
}

// inProcess is the core behind an httptest server.
type inProcess struct {
	srv *httptest.Server
}

func startInProcess(t *testing.T, o grantsOptions) *inProcess {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	opts := core.Options{
		RequireCapsuleUser: !o.NoRequireCapsuleUser,
		FeatureGates:       map[string]bool{core.GateProxyClusterScoped: o.ClusterScoped, core.GateProxyAllNamespaced: o.AllNamespaced},
	}
	c, err := core.New(ctx, fx.Config(), opts)
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 90*time.Second)
	defer wcancel()
	if !c.WaitForSync(wctx) {
		t.Fatal("core caches did not sync")
	}
	users := map[string]core.Caller{}
	for _, u := range testUsers {
		users[fx.Token(t, u.Name)] = core.Caller{User: u.Name, Groups: append(append([]string{}, u.Groups...), "system:authenticated")}
	}
	// TLS, because kubectl sends no bearer token over plain HTTP.
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, ok := users[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		if !ok {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		c.ServeHTTP(w, r.WithContext(core.WithCaller(r.Context(), caller)))
	}))
	t.Cleanup(srv.Close)
	return &inProcess{srv: srv}
}

func (p *inProcess) config(t testing.TB, user string) *rest.Config {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw})
	return &rest.Config{Host: p.srv.URL, BearerToken: fx.Token(t, user), QPS: -1, Timeout: time.Minute,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
}

func (p *inProcess) Do(t testing.TB, user, method, path string, body string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, p.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if user != "" {
		req.Header.Set("Authorization", "Bearer "+fx.Token(t, user))
	}
	if body != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp.StatusCode, string(b)
}

func (p *inProcess) Kubectl(t testing.TB, user string, args ...string) (string, error) {
	t.Helper()
	return runKubectl(t, fx.WriteKubeconfig(t, uniq("inproc-"+user), p.config(t, user)), args...)
}

func (p *inProcess) Dynamic(t testing.TB, user string) dynamic.Interface {
	t.Helper()
	d, err := dynamic.NewForConfig(p.config(t, user))
	if err != nil {
		t.Fatal(err)
	}
	return d
}
