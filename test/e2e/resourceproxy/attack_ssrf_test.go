package resourceproxy

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
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

// Row r24:18 of issue 24's outside attack review: a workspace admin aims
// an external ResourceProxy target at the hub host (127.0.0.1:<port>,
// a name resolving to loopback, or peers in her cluster's EndpointSlice),
// so the provider process dials the hub host's ports for her: an open
// port and a closed one answered differently (TLS error against refused
// connection, and timing), and she could reach the hub's own listeners or
// etcd. Now the provider's target policy refuses such addresses before
// any dial: the ResourceProxy is Ready=False TargetAddressRefused with one
// message whatever listens there, requests get one answer, and a listener
// at the open port accepts nothing.

// acceptCounter listens on addr and counts the connections it accepts
// (closing each): the open port the attacker probes.
type acceptCounter struct {
	l        net.Listener
	accepted atomic.Int32
}

func listenCounting(t *testing.T, addr string) *acceptCounter {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := &acceptCounter{l: l}
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			c.accepted.Add(1)
			_ = conn.Close()
		}
	}()
	t.Cleanup(func() { _ = l.Close() })
	return c
}

func (c *acceptCounter) port() string { return strconv.Itoa(c.l.Addr().(*net.TCPAddr).Port) }

// ssrfKubeconfig is the attacker's kubeconfig Secret content: server, an
// optional CA and TLS server name, a token.
func ssrfKubeconfig(t *testing.T, server, serverName string, ca *x509.Certificate) string {
	t.Helper()
	cl := &clientcmdapi.Cluster{Server: server, TLSServerName: serverName}
	if ca != nil {
		cl.CertificateAuthorityData = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["target"] = cl
	kc.AuthInfos["mallory"] = &clientcmdapi.AuthInfo{Token: "mallory-token"}
	kc.Contexts["target"] = &clientcmdapi.Context{Cluster: "target", AuthInfo: "mallory"}
	kc.CurrentContext = "target"
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// malloryWorkspace makes root:acme:mallory with the provider enabled and
// the provider allowed to read its Secrets, as the workspace admin would.
func malloryWorkspace(h *hub) string {
	const ws = "root:acme:mallory"
	h.mustK("", `{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":"acme"}}`, "apply", "-f", "-")
	h.mustK("", "", "wait", "--for=condition=Ready", "workspace/acme", "--timeout=60s")
	h.mustK("root:acme", `{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":"mallory"}}`, "apply", "-f", "-")
	h.mustK("root:acme", "", "wait", "--for=condition=Ready", "workspace/mallory", "--timeout=60s")
	h.mustK(ws, `{"apiVersion":"providers.wharf.dev/v1alpha1","kind":"ProviderBinding","metadata":{"name":"resource-proxy"},"spec":{"provider":"resource-proxy"}}`, "apply", "-f", "-")
	h.mustK(ws, "", "create", "role", "rp-secrets", "-n", "default", "--verb=get", "--resource=secrets")
	h.mustK(ws, "", "create", "rolebinding", "rp-secrets", "-n", "default", "--role=rp-secrets", "--user=system:wharf:provider:resource-proxy")
	return ws
}

// aimProxy creates Secret name with the kubeconfig and a ResourceProxy
// name routing <name>.example.com/v1 things to it.
func aimProxy(h *hub, ws, name, kubeconfig string) {
	h.mustK(ws, "", "create", "secret", "generic", name, "-n", "default", "--from-file=kubeconfig="+kubeconfig)
	h.mustK(ws, fmt.Sprintf(`apiVersion: proxy.wharf.dev/v1alpha1
kind: ResourceProxy
metadata: {name: %[1]s}
spec:
  target: {external: {name: target, secretRef: {namespace: default, name: %[1]s}}}
  resources: [{group: %[1]s.example.com, version: v1, resource: things}]
`, name), "apply", "-f", "-")
}

// readyOf is the ResourceProxy's Ready condition: "status|reason|message".
func readyOf(h *hub, ws, name string) string {
	out, err := h.k(ws, "", "get", "resourceproxy", name, "-o",
		`jsonpath={.status.conditions[?(@.type=="Ready")].status}|{.status.conditions[?(@.type=="Ready")].reason}|{.status.conditions[?(@.type=="Ready")].message}`)
	if err != nil {
		return ""
	}
	return out
}

func reasonOf(cond string) string {
	parts := strings.SplitN(cond, "|", 3)
	if len(parts) < 2 {
		return ""
	}
	return parts[1]
}

func TestAttackLimitsSSRF(t *testing.T) {
	// Subtest names stay short: the hub's data dir (t.TempDir) holds the
	// plugin socket, whose path is limited to 103 bytes.
	t.Run("server", func(t *testing.T) { // loopback by open port, closed port and name; default policy
		open := listenCounting(t, "127.0.0.1:0")
		closed := listenCounting(t, "127.0.0.1:0")
		closedPort := closed.port()
		_ = closed.l.Close()
		// No provider config: the built-in target policy.
		h := startHub(t)
		ws := malloryWorkspace(h)
		rows := []struct{ id, what, name, server string }{
			{"r24:18", "127.0.0.1:<open port>", "open", "https://127.0.0.1:" + open.port()},
			{"r24:18", "127.0.0.1:<closed port>", "closed", "https://127.0.0.1:" + closedPort},
			{"r24:18", "localhost:<open port> (a name resolving to loopback)", "name", "https://localhost:" + open.port()},
		}
		for _, r := range rows {
			aimProxy(h, ws, r.name, ssrfKubeconfig(t, r.server, "", nil))
		}
		type answer struct{ cond, request string }
		got := map[string]answer{}
		for _, r := range rows {
			eventually(t, r.id+" "+r.what+": the provider judged the target", func() error {
				if reason := reasonOf(readyOf(h, ws, r.name)); reason == "" || reason == "SecretForbidden" {
					return fmt.Errorf("no verdict yet: %q", readyOf(h, ws, r.name))
				}
				return nil
			})
			cond := strings.ReplaceAll(readyOf(h, ws, r.name), r.name+".example.com", "<group>")
			code, _, body := h.raw("/clusters/" + ws + "/apis/" + r.name + ".example.com/v1/namespaces/default/things")
			// The rows differ only in the group they route; the condition
			// and the answer must differ in nothing else.
			got[r.name] = answer{cond, strconv.Itoa(code) + " " + strings.ReplaceAll(body, r.name+".example.com", "<group>")}
			t.Logf("%s %s: condition %q; list answers %s", r.id, r.what, cond, got[r.name].request)
			if reason := reasonOf(cond); reason != "TargetAddressRefused" || !strings.HasPrefix(cond, "False|") {
				t.Errorf("%s %s: Ready condition %q, want False TargetAddressRefused", r.id, r.what, cond)
			}
		}
		for _, r := range rows[1:] {
			if got[r.name] != got[rows[0].name] {
				t.Errorf("%s %s answers %+v, %s answers %+v: an oracle", r.id, r.what, got[r.name], rows[0].what, got[rows[0].name])
			}
		}
		if n := open.accepted.Load(); n != 0 {
			t.Errorf("r24:18: the provider dialled the hub host's open port %d times", n)
		}
	})

	t.Run("peers", func(t *testing.T) { // loopback peers in the target's EndpointSlice
		open := listenCounting(t, "127.0.0.1:0")
		target := newSliceTarget(t, "127.0.0.2:0", []string{"127.0.0.1", "localhost"}, open.port())
		// The operator allows the target's own address, nothing else.
		h := startHub(t, providerConfig(t, "targetPolicy:\n  allowCIDRs: [\"127.0.0.2/32\"]\n")...)
		ws := malloryWorkspace(h)
		aimProxy(h, ws, "peers", ssrfKubeconfig(t, "https://"+target.srv.Listener.Addr().String(), "example.com", target.srv.Certificate()))
		eventually(t, "the provider listed the target's EndpointSlice", func() error {
			if target.lists.Load() == 0 {
				return fmt.Errorf("not yet")
			}
			return nil
		})
		eventually(t, "r24:18 peers: a verdict or a dial", func() error {
			if open.accepted.Load() > 0 || reasonOf(readyOf(h, ws, "peers")) == "TargetAddressRefused" {
				return nil
			}
			return fmt.Errorf("condition %q, %d dials", readyOf(h, ws, "peers"), open.accepted.Load())
		})
		code, _, body := h.raw("/clusters/" + ws + "/apis/peers.example.com/v1/namespaces/default/things")
		cond := readyOf(h, ws, "peers")
		t.Logf("r24:18 peers 127.0.0.1 and localhost: condition %q; list answers %d %s", cond, code, body)
		if n := open.accepted.Load(); n != 0 {
			t.Errorf("r24:18 peers: the provider dialled the hub host's open port %d times", n)
		}
		if !strings.HasPrefix(cond, "False|TargetAddressRefused|every peer address") {
			t.Errorf("r24:18 peers: Ready condition %q", cond)
		}
		if code == http.StatusOK {
			t.Errorf("r24:18 peers: the list was served: %s", body)
		}
	})
}

// sliceTarget is an HTTPS server standing for the attacker's cluster: its
// default/kubernetes EndpointSlice lists peers she chose, and it holds a
// watch open with no events.
type sliceTarget struct {
	srv   *httptest.Server
	lists atomic.Int32
}

func newSliceTarget(t *testing.T, addr string, peers []string, port string) *sliceTarget {
	t.Helper()
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	st := &sliceTarget{}
	stop := make(chan struct{})
	st.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices" {
			http.NotFound(w, r)
			return
		}
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
		st.lists.Add(1)
		port, name, ready := int32(p), "https", true
		_ = json.NewEncoder(w).Encode(&discoveryv1.EndpointSliceList{
			TypeMeta: metav1.TypeMeta{Kind: "EndpointSliceList", APIVersion: "discovery.k8s.io/v1"},
			ListMeta: metav1.ListMeta{ResourceVersion: "1"},
			Items: []discoveryv1.EndpointSlice{{
				ObjectMeta:  metav1.ObjectMeta{Name: "kubernetes", Namespace: "default", ResourceVersion: "1", Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes"}},
				AddressType: discoveryv1.AddressTypeFQDN,
				Endpoints:   []discoveryv1.Endpoint{{Addresses: peers, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
				Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port}},
			}},
		})
	}))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = st.srv.Listener.Close()
	st.srv.Listener = l
	st.srv.StartTLS()
	t.Cleanup(func() {
		close(stop)
		st.srv.CloseClientConnections()
		st.srv.Close()
	})
	return st
}
