package resourceproxy

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wharfhub/wharf/providers/resourceproxy/targetpolicy"
)

// counter is a TCP listener that counts the connections it accepts and
// closes them: the port is open, and anything the provider dials there is
// seen.
type counter struct {
	l        net.Listener
	accepted atomic.Int32
}

func openPort(t *testing.T) *counter {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &counter{l: l}
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

func (c *counter) port() int { return c.l.Addr().(*net.TCPAddr).Port }

// closedPort is a port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return p
}

func kubeconfigFor(t *testing.T, server string) []byte {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["t"] = &clientcmdapi.Cluster{Server: server}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "not-a-secret"}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "t", AuthInfo: "u"}
	kc.CurrentContext = "c"
	b, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dns answers from a table, first answer first and the last one after
// that; localhost as /etc/hosts has it.
type dns struct {
	m     map[string][]string
	calls atomic.Int32
}

func (d *dns) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	i := int(d.calls.Add(1)) - 1
	answers := append([]string(nil), d.m[host]...)
	if host == "localhost" {
		answers = []string{"127.0.0.1,::1"}
	}
	if len(answers) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	if i >= len(answers) {
		i = len(answers) - 1
	}
	var out []netip.Addr
	for _, a := range strings.Split(answers[i], ",") {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

// defaultPolicy is the built-in policy on a host with one interface
// address, resolving through d.
func defaultPolicy(t *testing.T, d *dns) *targetpolicy.Policy {
	t.Helper()
	p, err := targetpolicy.New(context.Background(), targetpolicy.Config{}, targetpolicy.Options{Resolver: d,
		HostAddrs: func() ([]netip.Addr, error) { return []netip.Addr{netip.MustParseAddr("192.0.2.10")}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func policyHandler(t *testing.T, kc []byte, p *targetpolicy.Policy) (*Handler, *Targets, *Metrics) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Now())
	m := NewMetrics()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	routes := NewRoutes()
	routes.Set("c1", map[string]*Route{"g.example.com/v1": {Cluster: "c1", Group: "g.example.com", Version: "v1", Mode: AccessOwned,
		Resources: []string{"things"}, Target: Target{External: &External{Name: "t1", SecretRef: SecretRef{Namespace: "ops", Name: "kc"}}}}})
	ts := NewTargets(ctx, nil, oneSecret(kc), clk, m, p)
	return NewHandler(routes, ts, allNamespaces{}, m, clk), ts, m
}

// TestRefusedServerIsNeverDialled: an external target whose server is a
// refused address, by literal or by name, open port or closed, is refused
// before any dial: the route's problem is TargetAddressRefused with one
// message, the request answer is the one 503, and the open port never
// sees a connection.
func TestRefusedServerIsNeverDialled(t *testing.T) {
	open := openPort(t)
	closed := closedPort(t)
	var first struct {
		code          int
		body, problem string
	}
	for i, server := range []string{
		"https://127.0.0.1:" + strconv.Itoa(open.port()),
		"https://127.0.0.1:" + strconv.Itoa(closed),
		"https://localhost:" + strconv.Itoa(open.port()),
		"https://[::ffff:127.0.0.1]:" + strconv.Itoa(open.port()),
		"https://loop.example.test:" + strconv.Itoa(open.port()),
		"https://0.0.0.0:" + strconv.Itoa(open.port()),
		"https://169.254.169.254",
		"https://192.0.2.10:2379",
	} {
		t.Run(server, func(t *testing.T) {
			h, ts, _ := policyHandler(t, kubeconfigFor(t, server), defaultPolicy(t, &dns{m: map[string][]string{"loop.example.test": {"127.0.0.1"}}}))
			_, err := ts.Get(context.Background(), h.routes.Get("c1", "g.example.com", "v1"))
			se, ok := err.(*errSecret)
			if !ok || se.reason != ReasonTargetAddressRefused || se.msg != msgServerRefused {
				t.Fatalf("Get: %v", err)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, aggregated(http.MethodGet, "/apis/g.example.com/v1/namespaces/ns/things"))
			if i == 0 {
				first.code, first.body, first.problem = rec.Code, rec.Body.String(), se.msg
			}
			if rec.Code != http.StatusServiceUnavailable || rec.Code != first.code || rec.Body.String() != first.body || se.msg != first.problem {
				t.Errorf("answer %d %s differs from the first case's %d %s", rec.Code, rec.Body.String(), first.code, first.body)
			}
		})
	}
	if n := open.accepted.Load(); n != 0 {
		t.Errorf("the open port accepted %d connections", n)
	}
}

// TestRebindingRefusedAtDial: the server's name resolves to a public
// address when the connection is built and to loopback afterwards; every
// dial (requests and the peer watch) is refused, the open port sees
// nothing and the request gets the one 503.
func TestRebindingRefusedAtDial(t *testing.T) {
	open := openPort(t)
	d := &dns{m: map[string][]string{"rebind.example.test": {"203.0.113.5", "127.0.0.1"}}}
	h, ts, m := policyHandler(t, kubeconfigFor(t, "https://rebind.example.test:"+strconv.Itoa(open.port())), defaultPolicy(t, d))
	d.calls.Store(0)
	if _, err := ts.Get(context.Background(), h.routes.Get("c1", "g.example.com", "v1")); err != nil {
		t.Fatalf("validation saw the public answer, yet: %v", err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, aggregated(http.MethodGet, "/apis/g.example.com/v1/namespaces/ns/things"))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("answer %d %s", rec.Code, rec.Body.String())
	}
	if n := open.accepted.Load(); n != 0 {
		t.Errorf("the open port accepted %d connections", n)
	}
	if n := testMetric(t, m, "wharf_resource_proxy_peer_dial_failures_total", "error"); n < 1 {
		t.Errorf("refused dials counted: %v", n)
	}
}

// TestPublishJudgesPeers: the EndpointSlice is the second way to name an
// address. Refused literals and names resolving to refused addresses are
// left out; a list refused entirely is the connection's refusal (and tells
// the controller), and a later list with an allowed peer lifts it.
func TestPublishJudgesPeers(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	p := defaultPolicy(t, &dns{m: map[string][]string{"api.example.test": {"203.0.113.7"}}})
	conn, err := newTargetConn("t1", &rest.Config{Host: "https://203.0.113.5:6443"}, []string{"203.0.113.5:6443"}, clk, NewMetrics(), (&net.Dialer{}).DialContext, p)
	if err != nil {
		t.Fatal(err)
	}
	var told atomic.Int32
	conn.onRefusal = func() { told.Add(1) }
	slice := func(addrs ...string) map[string]*discoveryv1.EndpointSlice {
		port, name := int32(6443), "https"
		return map[string]*discoveryv1.EndpointSlice{"kubernetes": {AddressType: discoveryv1.AddressTypeFQDN,
			Endpoints: []discoveryv1.Endpoint{{Addresses: addrs}}, Ports: []discoveryv1.EndpointPort{{Name: &name, Port: &port}}}}
	}
	for _, c := range []struct {
		name    string
		addrs   []string
		hosts   string
		refused bool
		told    int32
	}{
		{"all refused", []string{"127.0.0.1", "localhost", "169.254.169.254", "192.0.2.10"}, "", true, 1},
		{"still refused: no second notice", []string{"::1"}, "", true, 1},
		{"one allowed among refused", []string{"127.0.0.1", "203.0.113.6"}, "203.0.113.6:6443", false, 2},
		{"allowed name", []string{"api.example.test"}, "api.example.test:6443", false, 2},
		{"empty list is no refusal", nil, "", false, 2},
	} {
		conn.publish(context.Background(), slice(c.addrs...))
		if got := strings.Join(conn.peers.Hosts(), ","); got != c.hosts {
			t.Errorf("%s: peers %q, want %q", c.name, got, c.hosts)
		}
		if got := conn.refusal() != nil; got != c.refused {
			t.Errorf("%s: refused %v, want %v", c.name, got, c.refused)
		}
		if n := told.Load(); n != c.told {
			t.Errorf("%s: controller told %d times, want %d", c.name, n, c.told)
		}
	}
}

func testMetric(t *testing.T, m *Metrics, name, reason string) float64 {
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
