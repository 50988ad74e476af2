package targetpolicy

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
)

// names is a resolver over a fixed table, standing for DNS: a name the
// attacker controls can answer anything, and can change its answer
// between two lookups (rebinding), which answers[1:] play.
type names struct {
	m     map[string][][]netip.Addr
	calls atomic.Int32
}

func (n *names) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	i := int(n.calls.Add(1)) - 1
	answers, ok := n.m[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	if i >= len(answers) {
		i = len(answers) - 1
	}
	return answers[i], nil
}

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

// host is the hub host of these tests: one interface address, plus
// loopback.
func host() ([]netip.Addr, error) { return addrs("127.0.0.1", "::1", "192.0.2.10"), nil }

func newPolicy(t *testing.T, cfg Config, r Resolver) *Policy {
	t.Helper()
	p, err := New(context.Background(), cfg, Options{
		HubURLs:   []string{"https://hub.example.test:6443", "https://127.0.0.1:6443"},
		HostAddrs: host,
		Resolver:  r,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestJudge(t *testing.T) {
	dns := &names{m: map[string][][]netip.Addr{"hub.example.test": {addrs("198.51.100.7")}}}
	def := newPolicy(t, Config{}, dns)
	dev := newPolicy(t, Config{AllowCIDRs: []string{"127.0.0.0/8", "::1"}, DenyCIDRs: []string{"127.0.0.9/32", "203.0.113.0/24"}}, dns)
	for _, c := range []struct {
		name string
		p    *Policy
		ip   string
		ok   bool
		why  string
	}{
		{"public IPv4", def, "203.0.113.5", true, ""},
		{"private IPv4 (a cluster on the LAN)", def, "10.1.2.3", true, ""},
		{"private IPv6 ULA", def, "fd12:3456::1", true, ""},
		{"loopback", def, "127.0.0.1", false, "loopback"},
		{"loopback elsewhere in 127/8", def, "127.45.6.7", false, "loopback"},
		{"IPv6 loopback", def, "::1", false, "loopback"},
		{"IPv4-mapped loopback", def, "::ffff:127.0.0.1", false, "loopback"},
		{"unspecified", def, "0.0.0.0", false, "unspecified"},
		{"this network", def, "0.1.2.3", false, "unspecified"},
		{"IPv6 unspecified", def, "::", false, "unspecified"},
		{"cloud metadata", def, "169.254.169.254", false, "cloud metadata"},
		{"AWS metadata over IPv6", def, "fd00:ec2::254", false, "cloud metadata"},
		{"Alibaba metadata", def, "100.100.100.200", false, "cloud metadata"},
		{"link-local", def, "169.254.10.1", false, "link-local"},
		{"IPv6 link-local with zone", def, "fe80::1%eth0", false, "link-local"},
		{"multicast", def, "239.1.1.1", false, "multicast"},
		{"IPv6 multicast", def, "ff02::1", false, "multicast"},
		{"broadcast", def, "255.255.255.255", false, "broadcast"},
		{"IPv4-compatible IPv6", def, "::7f00:1", false, "IPv4-compatible IPv6"},
		{"the hub host's interface", def, "192.0.2.10", false, "an address of the hub host"},
		{"the hub host's neighbour", def, "192.0.2.11", true, ""},
		{"the hub URL's address", def, "198.51.100.7", false, "the hub's own address"},
		{"allowed loopback", dev, "127.0.0.1", true, ""},
		{"allowed IPv6 loopback (bare address)", dev, "::1", true, ""},
		{"deny wins over allow", dev, "127.0.0.9", false, "targetPolicy.denyCIDRs"},
		{"deny of a public range", dev, "203.0.113.5", false, "targetPolicy.denyCIDRs"},
		{"allow does not widen to link-local", dev, "169.254.169.254", false, "cloud metadata"},
		{"allow of loopback does not allow other host addresses", dev, "192.0.2.10", false, "an address of the hub host"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ok, why := c.p.Judge(netip.MustParseAddr(c.ip))
			if ok != c.ok || why != c.why {
				t.Errorf("Judge(%s) = %v %q, want %v %q", c.ip, ok, why, c.ok, c.why)
			}
		})
	}
}

func TestNewRefusesBadCIDRs(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"garbage allow", Config{AllowCIDRs: []string{"loopback"}}, []string{"allowCIDRs", `"loopback"`}},
		{"bad prefix length", Config{DenyCIDRs: []string{"10.0.0.0/33"}}, []string{"denyCIDRs", "10.0.0.0/33"}},
		{"both at once", Config{AllowCIDRs: []string{"x"}, DenyCIDRs: []string{"y"}}, []string{"allowCIDRs", "denyCIDRs"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(context.Background(), c.cfg, Options{HostAddrs: host, Resolver: &names{}})
			if err == nil {
				t.Fatal("New accepted it")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestHostAddrsUnknown: when the host's own addresses cannot be listed,
// an address outside every other rule is refused, not guessed allowed.
func TestHostAddrsUnknown(t *testing.T) {
	p, err := New(context.Background(), Config{}, Options{Resolver: &names{},
		HostAddrs: func() ([]netip.Addr, error) { return nil, errors.New("netlink: permission denied") }})
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := p.Judge(netip.MustParseAddr("203.0.113.5")); ok || !strings.Contains(why, "unknown") {
		t.Errorf("Judge = %v %q", ok, why)
	}
}

func TestAllows(t *testing.T) {
	dns := &names{m: map[string][][]netip.Addr{
		"localhost":        {addrs("127.0.0.1", "::1")},
		"api.example.test": {addrs("203.0.113.5")},
	}}
	p := newPolicy(t, Config{}, dns)
	for _, c := range []struct {
		peer string
		ok   bool
	}{
		{"127.0.0.1:2379", false},
		{"[::1]:6443", false},
		{"[::ffff:127.0.0.1]:6443", false},
		{"169.254.169.254:80", false},
		{"203.0.113.5:6443", true},
		{"localhost:6443", false},
		{"api.example.test:6443", true},
		{"unresolvable.example.test:6443", true}, // judged again when dialled
		{"203.0.113.5", true},
		{"127.0.0.1", false},
		{":6443", false},
	} {
		if got := p.Allows(context.Background(), c.peer); got != c.ok {
			t.Errorf("Allows(%s) = %v, want %v", c.peer, got, c.ok)
		}
	}
}

// dialRecorder is the dial under the policy; it records what it was asked
// to dial and connects nowhere.
type dialRecorder struct{ dialled []string }

func (d *dialRecorder) dial(_ context.Context, _, addr string) (net.Conn, error) {
	d.dialled = append(d.dialled, addr)
	c1, c2 := net.Pipe()
	_ = c2.Close()
	return c1, nil
}

func TestDialContext(t *testing.T) {
	dns := &names{m: map[string][][]netip.Addr{
		"api.example.test":    {addrs("203.0.113.5", "2001:db8::5")},
		"loop.example.test":   {addrs("127.0.0.1")},
		"mixed.example.test":  {addrs("203.0.113.5", "169.254.169.254")},
		"mapped.example.test": {addrs("::ffff:127.0.0.1")},
	}}
	p := newPolicy(t, Config{}, dns)
	for _, c := range []struct {
		name    string
		addr    string
		dialled []string // nil: refused, nothing dialled
	}{
		{"literal public", "203.0.113.5:6443", []string{"203.0.113.5:6443"}},
		{"name to public addresses: the first judged address", "api.example.test:6443", []string{"203.0.113.5:6443"}},
		{"literal loopback", "127.0.0.1:2379", nil},
		{"name to loopback", "loop.example.test:6443", nil},
		{"name with one metadata address among public ones", "mixed.example.test:443", nil},
		{"name to IPv4-mapped loopback", "mapped.example.test:443", nil},
		{"literal metadata", "169.254.169.254:80", nil},
		{"the hub host's interface", "192.0.2.10:2379", nil},
		{"empty host (the local system)", ":2379", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := &dialRecorder{}
			conn, err := p.DialContext(context.Background(), "tcp", c.addr, d.dial)
			if c.dialled == nil {
				if !IsRefused(err) || conn != nil {
					t.Fatalf("want a refusal, got %v %v", conn, err)
				}
				if len(d.dialled) != 0 {
					t.Fatalf("refused, yet dialled %v", d.dialled)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_ = conn.Close()
			if strings.Join(d.dialled, ",") != strings.Join(c.dialled, ",") {
				t.Errorf("dialled %v, want %v", d.dialled, c.dialled)
			}
		})
	}
}

// TestRebinding: a name that passed validation and then resolves to
// loopback is refused at dial time, and what is dialled is always the
// address that was judged, never the name (no second lookup between check
// and connect).
func TestRebinding(t *testing.T) {
	dns := &names{m: map[string][][]netip.Addr{"rebind.example.test": {addrs("203.0.113.5"), addrs("127.0.0.1")}}}
	p := newPolicy(t, Config{}, dns)
	dns.calls.Store(0)
	if _, err := p.Resolve(context.Background(), "rebind.example.test"); err != nil {
		t.Fatalf("first answer (public) refused: %v", err)
	}
	d := &dialRecorder{}
	_, err := p.DialContext(context.Background(), "tcp", "rebind.example.test:6443", d.dial)
	var re *RefusedError
	if !errors.As(err, &re) || re.Why != "loopback" || re.Host != "rebind.example.test" {
		t.Fatalf("second answer (loopback) not refused: %v", err)
	}
	if len(d.dialled) != 0 {
		t.Fatalf("dialled %v", d.dialled)
	}
	if n := dns.calls.Load(); n != 2 {
		t.Errorf("%d lookups, want 2 (one per check)", n)
	}
}

// TestDialTriesJudgedAddressesInOrder: the first address failing, the
// next judged one is dialled; a lookup failure is an error, not a
// refusal.
func TestDialTriesJudgedAddressesInOrder(t *testing.T) {
	dns := &names{m: map[string][][]netip.Addr{"api.example.test": {addrs("203.0.113.5", "203.0.113.6")}}}
	p := newPolicy(t, Config{}, dns)
	var dialled []string
	_, err := p.DialContext(context.Background(), "tcp", "api.example.test:6443", func(_ context.Context, _, addr string) (net.Conn, error) {
		dialled = append(dialled, addr)
		return nil, errors.New("connection refused")
	})
	if err == nil || IsRefused(err) {
		t.Fatalf("err = %v", err)
	}
	if strings.Join(dialled, ",") != "203.0.113.5:6443,203.0.113.6:6443" {
		t.Errorf("dialled %v", dialled)
	}
	if _, err := p.DialContext(context.Background(), "tcp", "nowhere.example.test:6443", nil); err == nil || IsRefused(err) {
		t.Errorf("unresolvable name: %v", err)
	}
}

func TestRefusedErrorNamesAddressAndRule(t *testing.T) {
	for _, c := range []struct {
		err  *RefusedError
		want string
	}{
		{&RefusedError{Host: "127.0.0.1", Addr: netip.MustParseAddr("127.0.0.1"), Why: "loopback"}, "address 127.0.0.1 is refused by the target policy (loopback)"},
		{&RefusedError{Host: "localhost", Addr: netip.MustParseAddr("::1"), Why: "loopback"}, "localhost resolves to ::1, refused by the target policy (loopback)"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}
