package fairness

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wharfhub/wharf/hub/login"
)

// accepted runs Accept in the background.
func accepted(l net.Listener) chan net.Conn {
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			close(ch)
			return
		}
		ch <- c
	}()
	return ch
}

func dialFrom(t *testing.T, l net.Listener, local string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	c, err := d.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func listen(t *testing.T, lim ConnLimits) net.Listener {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := LimitConnections(inner, lim, clocktesting.NewFakeClock(time.Unix(0, 0)))
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func closedByHub(c net.Conn) bool {
	_, err := c.Read(make([]byte, 1))
	return err != nil
}

// Past its per-address bound a client's new connection is closed at once
// and another address is served; past the total, a new connection takes
// the place of the oldest one the hub never answered, and one it answered
// stays.
func TestLimitConnections(t *testing.T) {
	l := listen(t, ConnLimits{Total: 2, PerAddress: 1})

	a := dialFrom(t, l, "127.0.0.5")
	first := <-accepted(l)
	// Same address again: closed by the hub, never handed out.
	over := dialFrom(t, l, "127.0.0.5")
	next := accepted(l)
	if !closedByHub(over) {
		t.Fatal("second connection from one address: want it closed")
	}
	b := dialFrom(t, l, "127.0.0.2")
	second := <-next
	if second == nil || login.HostOf(second.RemoteAddr().String()) != "127.0.0.2" {
		t.Fatalf("connection from another address: %v", second)
	}
	// The hub answers the first; the second stays silent.
	if _, err := first.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	// Total of 2 reached: a third address is served, in the place of the
	// never-answered second.
	dialFrom(t, l, "127.0.0.3")
	if c := <-accepted(l); c == nil || login.HostOf(c.RemoteAddr().String()) != "127.0.0.3" {
		t.Fatalf("past the total: %v", c)
	}
	if !closedByHub(b) {
		t.Fatal("the never-answered connection stayed open past the total")
	}
	if _, err := first.Write([]byte("y")); err != nil {
		t.Fatalf("the answered connection was closed: %v", err)
	}
	_ = first.Close()
	_ = first.Close() // closing twice frees one place only
}

// A connection's first bytes take a handshake token of its prefix: past
// the prefix's burst it is closed unread; another prefix is served, and
// the hub's own address has a bucket of its own (TestOwnHandshakes).
func TestHandshakeLimit(t *testing.T) {
	l := listen(t, ConnLimits{HandshakesPerSecond: 2}) // per prefix: 1/s, burst 2
	read := func(local string) error {
		c := dialFrom(t, l, local)
		s := <-accepted(l)
		defer s.Close()
		if _, err := c.Write([]byte("hello")); err != nil {
			return err
		}
		_, err := s.Read(make([]byte, 5))
		return err
	}
	for i, tc := range []struct {
		from string
		want error
	}{
		{"127.0.5.1", nil}, {"127.0.5.2", nil},
		{"127.0.5.3", errHandshakeRefused}, // same /24, burst used
		{"127.0.6.1", nil},                 // another prefix, quiet
		{"127.0.0.1", nil},                 // the hub's own address: its own burst
		{"127.0.0.1", nil},
	} {
		if err := read(tc.from); !errors.Is(err, tc.want) {
			t.Fatalf("%d from %s: %v, want %v", i, tc.from, err, tc.want)
		}
	}
}

func TestConnectionLimits(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		max, perAddr          int
		nofile                uint64
		wantTotal, wantPerAdr int
	}{
		{"default: three quarters of nofile", 0, 1000, 20000, 15000, 1000},
		{"explicit", 500, 10, 20000, 500, 10},
		{"nofile unknown", 0, 0, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			o.MaxConnections, o.MaxConnectionsPerAddress = tc.max, tc.perAddr
			total, per := o.ConnectionLimits(tc.nofile)
			if total != tc.wantTotal || per != tc.wantPerAdr {
				t.Fatalf("got %d, %d; want %d, %d", total, per, tc.wantTotal, tc.wantPerAdr)
			}
		})
	}
}

// Past the total, the never-answered connection closed is one of the
// prefix holding the most such: a newcomer from elsewhere, not answered
// yet either, survives the churn of an idle flood.
func TestLimitConnectionsHeaviestPrefix(t *testing.T) {
	l := listen(t, ConnLimits{Total: 3})
	idle1 := dialFrom(t, l, "127.0.9.1")
	<-accepted(l)
	dialFrom(t, l, "127.0.9.2")
	<-accepted(l)
	newcomer := dialFrom(t, l, "127.0.8.1")
	<-accepted(l)
	dialFrom(t, l, "127.0.9.3")
	<-accepted(l)
	if !closedByHub(idle1) {
		t.Fatal("the oldest idle connection of the heaviest prefix stayed open")
	}
	_ = newcomer.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := newcomer.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the newcomer from another prefix: %v, want it open", err)
	}
}
