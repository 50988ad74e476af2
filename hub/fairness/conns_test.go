package fairness

import (
	"net"
	"testing"
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

// Past its per-address bound a client's new connection is closed at once
// and another address is served; past the total, Accept waits until a
// connection closes.
func TestLimitConnections(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := LimitConnections(inner, 2, 1)
	defer l.Close()

	dialFrom(t, l, "127.0.0.1")
	first := <-accepted(l)
	// Same address again: closed by the hub, never handed out.
	over := dialFrom(t, l, "127.0.0.1")
	next := accepted(l)
	if _, err := over.Read(make([]byte, 1)); err == nil {
		t.Fatalf("second connection from one address: read %v, want it closed", err)
	}
	// Another address: served.
	dialFrom(t, l, "127.0.0.2")
	second := <-next
	if second == nil || hostOf(second.RemoteAddr()) != "127.0.0.2" {
		t.Fatalf("connection from another address: %v", second)
	}
	// Total of 2 reached: a third address waits until one closes.
	dialFrom(t, l, "127.0.0.3")
	third := accepted(l)
	select {
	case c := <-third:
		t.Fatalf("accepted %v past the total", c.RemoteAddr())
	default:
	}
	_ = first.Close()
	_ = first.Close() // closing twice frees one slot only
	if c := <-third; c == nil || hostOf(c.RemoteAddr()) != "127.0.0.3" {
		t.Fatalf("after a close: %v", c)
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
