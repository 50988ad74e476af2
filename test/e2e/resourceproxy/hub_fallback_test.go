package resourceproxy

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// brokenTarget is an in-test HTTPS server standing in for an external
// target (the kubeconfig Secret points at it): it answers the discovery
// of databases.example.com/v1 with a chosen code and every other API
// request (the proxied list) with 500, as a target whose authentication
// or storage is failing would. Its default/kubernetes EndpointSlice (the
// provider's peer watch) is healthy, listing the server itself, so the
// peer list never goes stale and only the discovery answer can make the
// provider serve its fallback.
type brokenTarget struct {
	srv       *httptest.Server
	code      int
	discovery atomic.Int32 // discovery requests answered with code
}

func newBrokenTarget(t *testing.T, code int) *brokenTarget {
	b := &brokenTarget{code: code}
	stop := make(chan struct{})
	b.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices" {
			b.serveSlices(w, r, stop)
			return
		}
		code := http.StatusInternalServerError
		if r.URL.Path == "/apis/"+group+"/v1" {
			b.discovery.Add(1)
			code = b.code
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(&metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status: metav1.StatusFailure, Code: int32(code), Message: "broken target"})
	}))
	b.srv.StartTLS()
	t.Cleanup(func() {
		close(stop)
		b.srv.CloseClientConnections()
		b.srv.Close()
	})
	return b
}

// serveSlices lists the kubernetes EndpointSlice with this server as the
// one ready endpoint, and holds a watch open with no events.
func (b *brokenTarget) serveSlices(w http.ResponseWriter, r *http.Request, stop <-chan struct{}) {
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Query().Get("watch") == "true" {
		w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(w).Flush()
		select {
		case <-r.Context().Done():
		case <-stop:
		}
		return
	}
	addr := b.srv.Listener.Addr().(*net.TCPAddr)
	port, name, ready := int32(addr.Port), "https", true
	_ = json.NewEncoder(w).Encode(&discoveryv1.EndpointSliceList{
		TypeMeta: metav1.TypeMeta{Kind: "EndpointSliceList", APIVersion: "discovery.k8s.io/v1"},
		ListMeta: metav1.ListMeta{ResourceVersion: "1"},
		Items: []discoveryv1.EndpointSlice{{
			ObjectMeta:  metav1.ObjectMeta{Name: "kubernetes", Namespace: "default", ResourceVersion: "1", Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{addr.IP.String()}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
			Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port}},
		}},
	})
}

// kubeconfig for server, trusting ca (the in-test target's certificate).
func writeTargetKubeconfig(t *testing.T, server string, ca *x509.Certificate) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["target"] = &clientcmdapi.Cluster{Server: server,
		CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})}
	kc.AuthInfos["rp"] = &clientcmdapi.AuthInfo{Token: "in-test-target-token"}
	kc.Contexts["target"] = &clientcmdapi.Context{Cluster: "target", AuthInfo: "rp"}
	kc.CurrentContext = "target"
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// raw sends GET path to the hub as the hub admin and returns the status,
// Retry-After and body.
func (h *hub) raw(path string) (int, string, string) {
	h.t.Helper()
	dir := filepath.Dir(h.kubecfg)
	crt, _ := os.ReadFile(filepath.Join(dir, "pki", "serving.crt"))
	tok, _ := os.ReadFile(filepath.Join(dir, "admin-token"))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(crt)
	req, _ := http.NewRequest(http.MethodGet, h.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}).Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
}

// promValue sums the samples of name in a text exposition whose label
// set contains every pair of want.
func promValue(text, name string, want map[string]string) float64 {
	var sum float64
	for line := range strings.SplitSeq(text, "\n") {
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		ok := true
		for k, v := range want {
			if !strings.Contains(line, k+`="`+v+`"`) {
				ok = false
			}
		}
		if f := strings.Fields(line); ok && len(f) >= 2 {
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			sum += v
		}
	}
	return sum
}

// TestDiscoveryFallbackThroughHub: client workspaces of a real hub proxy
// databases.example.com/v1 to external targets that answer discovery with
// 401, 404, 500 and 503, or are down (nothing listens). Each workspace's
// target fails from the start, so the hub never cached a good discovery
// answer: real kubectl api-resources (with an empty discovery cache) in
// each workspace still lists databases only because the provider serves
// its local fallback, while a list answers 503 with Retry-After: 1.
func TestDiscoveryFallbackThroughHub(t *testing.T) {
	h := startHub(t, loopbackTargets(t)...)
	h.mustK("", `{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":"acme"}}`, "apply", "-f", "-")
	h.mustK("", "", "wait", "--for=condition=Ready", "workspace/acme", "--timeout=60s")

	type tcase struct {
		name   string // workspace under root:acme and target name
		target *brokenTarget
		down   bool
	}
	var cases []tcase
	for _, code := range []int{401, 404, 500, 503} {
		cases = append(cases, tcase{name: fmt.Sprintf("fb-%d", code), target: newBrokenTarget(t, code)})
	}
	cases = append(cases, tcase{name: "fb-down", down: true})
	// A port nothing listens on, for the target that is down.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downURL := "https://" + l.Addr().String()
	l.Close()

	for _, c := range cases {
		ws := "root:acme:" + c.name
		h.mustK("root:acme", fmt.Sprintf(`{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":%q}}`, c.name), "apply", "-f", "-")
		h.mustK("root:acme", "", "wait", "--for=condition=Ready", "workspace/"+c.name, "--timeout=60s")
		h.mustK(ws, `{"apiVersion":"providers.wharf.dev/v1alpha1","kind":"ProviderBinding","metadata":{"name":"resource-proxy"},"spec":{"provider":"resource-proxy"}}`, "apply", "-f", "-")
		h.mustK(ws, "", "create", "role", "rp-secret", "-n", "default", "--verb=get", "--resource=secrets", "--resource-name=prod")
		h.mustK(ws, "", "create", "rolebinding", "rp-secret", "-n", "default", "--role=rp-secret", "--user=system:wharf:provider:resource-proxy")
		var kc string
		if c.down {
			kc = writeTargetKubeconfig(t, downURL, cases[0].target.srv.Certificate())
		} else {
			kc = writeTargetKubeconfig(t, c.target.srv.URL, c.target.srv.Certificate())
		}
		h.mustK(ws, "", "create", "secret", "generic", "prod", "-n", "default", "--from-file=kubeconfig="+kc)
		h.mustK(ws, fmt.Sprintf(`apiVersion: proxy.wharf.dev/v1alpha1
kind: ResourceProxy
metadata: {name: databases}
spec:
  target: {external: {name: %s, secretRef: {namespace: default, name: prod}}}
  resources: [{group: databases.example.com, version: v1, resource: databases}]
`, c.name), "apply", "-f", "-")
	}

	for _, c := range cases {
		ws := "root:acme:" + c.name
		if !c.down {
			eventually(t, c.name+": the provider watches the target's peers", func() error {
				if n := promValue(h.metrics(ws), "wharf_resource_proxy_peers", map[string]string{"target": c.name, "state": "healthy"}); n != 1 {
					return fmt.Errorf("healthy peers %v", n)
				}
				return nil
			})
		}
		eventually(t, c.name+": kubectl api-resources lists databases", func() error {
			cacheDir, err := os.MkdirTemp(t.TempDir(), "kubectl-cache")
			if err != nil {
				return err
			}
			out, err := h.k(ws, "", "--cache-dir", cacheDir, "api-resources", "--api-group="+group, "--no-headers")
			if err != nil || !strings.Contains(out, "databases") || !strings.Contains(out, "Database") {
				return fmt.Errorf("%v: %q", err, out)
			}
			return nil
		})
		code, retry, body := h.raw("/clusters/" + ws + "/apis/" + group + "/v1/namespaces/default/databases")
		if code != http.StatusServiceUnavailable || retry != "1" || !strings.Contains(body, fmt.Sprintf(`target \"%s\" for databases.example.com/v1 is unavailable`, c.name)) {
			t.Errorf("%s: list: %d Retry-After %q %s", c.name, code, retry, body)
		}
		m := h.metrics(ws)
		reason := "upstream"
		if c.down {
			// A refused dial, or the peer it quarantined.
			reason = ""
		} else if n := c.target.discovery.Load(); n < 1 {
			t.Errorf("%s: the target was never asked for discovery", c.name)
		}
		want := map[string]string{"target": c.name, "group_version": group + "/v1"}
		if reason != "" {
			want["reason"] = reason
		}
		if n := promValue(m, "wharf_resource_proxy_discovery_fallbacks_total", want); n < 1 {
			t.Errorf("%s: discovery fallbacks %v = %v, want ≥ 1", c.name, want, n)
		}
		t.Logf("%s: api-resources lists databases; list answered %d, Retry-After %s", c.name, code, retry)
	}
}
