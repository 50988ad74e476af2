package tenantconns

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// bed is a real HTTP/1.1 server behind a Tracker: each request names its
// tenant in X-Tenant, and one with X-Hold waits until release is closed.
type bed struct {
	t       *Tracker
	addr    string
	clock   *clocktesting.FakePassiveClock
	release chan struct{}
	held    chan struct{}
}

func newBed(t *testing.T, perTenant int) *bed {
	t.Helper()
	b := &bed{clock: clocktesting.NewFakePassiveClock(time.Unix(0, 0)), release: make(chan struct{}), held: make(chan struct{}, 8)}
	b.t = New(perTenant, nil, b.clock)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b.addr = ln.Addr().String()
	srv := &http.Server{Handler: b.t.Filter(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tenant := r.Header.Get("X-Tenant"); tenant != "" {
			Attribute(r.Context(), tenant)
		}
		if r.Header.Get("X-Hold") != "" {
			b.held <- struct{}{}
			<-b.release
		}
		_, _ = io.WriteString(w, "ok")
	})), ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(b.t.Listener(ln)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return b
}

// client is one kept-alive connection.
type client struct {
	c net.Conn
	r *bufio.Reader
}

func (b *bed) dial(t *testing.T) *client {
	t.Helper()
	c, err := net.Dial("tcp", b.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &client{c: c, r: bufio.NewReader(c)}
}

// send writes one request as tenant.
func (c *client) send(t *testing.T, tenant string, hold bool) {
	t.Helper()
	h := ""
	if hold {
		h = "X-Hold: 1\r\n"
	}
	if _, err := fmt.Fprintf(c.c, "GET / HTTP/1.1\r\nHost: hub\r\nX-Tenant: %s\r\n%s\r\n", tenant, h); err != nil {
		t.Fatal(err)
	}
}

// answer reads one answer; an error when the connection was closed.
func (c *client) answer() error {
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

func (c *client) do(t *testing.T, tenant string) {
	t.Helper()
	c.send(t, tenant, false)
	if err := c.answer(); err != nil {
		t.Fatalf("request as %s: %v", tenant, err)
	}
}

// closedByHub reports whether the hub closed c (a read ends at once).
func (c *client) closedByHub(t *testing.T) bool {
	t.Helper()
	_ = c.c.SetReadDeadline(time.Now().Add(time.Minute))
	_, err := c.r.ReadByte()
	if err == nil {
		t.Fatal("the hub sent bytes nobody asked for")
	}
	return errors.Is(err, io.EOF) || strings.Contains(err.Error(), "reset")
}

// open reports whether c is still open: a request on it is answered.
func (c *client) open(tenant string) bool {
	_ = c.c.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := fmt.Fprintf(c.c, "GET / HTTP/1.1\r\nHost: hub\r\nX-Tenant: %s\r\n\r\n", tenant); err != nil {
		return false
	}
	return c.answer() == nil
}

func TestTenantBound(t *testing.T) {
	b := newBed(t, 2)
	m1, m2 := b.dial(t), b.dial(t)
	m1.do(t, "mallory")
	b.clock.SetTime(b.clock.Now().Add(time.Second))
	m2.do(t, "mallory")
	b.clock.SetTime(b.clock.Now().Add(time.Second))
	v1, v2, v3 := b.dial(t), b.dial(t), b.dial(t)
	for _, v := range []*client{v1, v2} {
		v.do(t, "victor")
	}
	// Her third: her connection silent longest, m1, is closed; none of
	// victor's, who is at his bound too.
	m3 := b.dial(t)
	m3.do(t, "mallory")
	if !m1.closedByHub(t) {
		t.Fatal("m1 stayed open")
	}
	if !m2.open("mallory") || !m3.open("mallory") || !v1.open("victor") || !v2.open("victor") {
		t.Fatal("a connection other than her silent longest was closed")
	}
	// A connection's tenant is its first request's: victor's requests
	// on m2 change nothing, and an unnamed request attributes nothing.
	m2.do(t, "victor")
	v3.do(t, "")
	if n := len(b.t.byTenant["mallory"]); n != 2 {
		t.Fatalf("mallory holds %d connections, want 2", n)
	}

	// Both of hers carry a request: her next connection is closed once
	// its request ends, and hers in flight are answered.
	b.clock.SetTime(b.clock.Now().Add(time.Second))
	m2.send(t, "mallory", true)
	m3.send(t, "mallory", true)
	<-b.held
	<-b.held
	m4 := b.dial(t)
	m4.do(t, "mallory")
	if !m4.closedByHub(t) {
		t.Fatal("her newest connection stayed open while all of hers carried requests")
	}
	close(b.release)
	if m2.answer() != nil || m3.answer() != nil {
		t.Fatal("her requests in flight were cut")
	}
	b.t.mu.RLock()
	defer b.t.mu.RUnlock()
	if len(b.t.byTenant["mallory"]) != 2 || len(b.t.byTenant["victor"]) != 2 {
		t.Fatalf("held: %d of mallory's, %d of victor's", len(b.t.byTenant["mallory"]), len(b.t.byTenant["victor"]))
	}
}

func TestNoBound(t *testing.T) {
	if New(0, nil, clocktesting.NewFakePassiveClock(time.Now())) != nil {
		t.Fatal("0 must mean no tracker")
	}
	var tr *Tracker
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if tr.Listener(ln) != ln {
		t.Fatal("a nil tracker wraps the listener")
	}
}
