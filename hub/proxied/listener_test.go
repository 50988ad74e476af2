package proxied

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pires/go-proxyproto"
)

// dialFrom connects to addr from the loopback address src.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func header(t *testing.T, version byte, src, dst string) []byte {
	t.Helper()
	s, _ := net.ResolveTCPAddr("tcp", src)
	d, _ := net.ResolveTCPAddr("tcp", dst)
	b, err := proxyproto.HeaderProxyFromAddrs(version, s, d).Format()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// accept returns the next accepted connection's addresses and first
// bytes (n of them).
func accept(t *testing.T, l net.Listener, n int) (remote, local, data string) {
	t.Helper()
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("read after the header: %v", err)
	}
	return c.RemoteAddr().String(), c.LocalAddr().String(), string(b)
}

// TestListener runs the listener on a real loopback socket: 127.0.0.9 is
// the listed proxy; other loopback addresses are clients.
func TestListener(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, proxy, _ := net.ParseCIDR("127.0.0.9/32")
	var ownDials sync.Map // remote ip:port → true
	l := Listener(raw, []*net.IPNet{proxy}, 2*time.Second, func(remote string) bool { _, ok := ownDials.Load(remote); return ok })
	defer l.Close()
	addr := raw.Addr().String()

	for _, tc := range []struct {
		name, from string
		send       []byte
		wantRemote string // "" : the TCP peer's
		wantLocal  string
	}{
		{name: "v1 from the proxy", from: "127.0.0.9", send: append(header(t, 1, "203.0.113.7:40000", "192.0.2.1:443"), "hello"...),
			wantRemote: "203.0.113.7:40000", wantLocal: "192.0.2.1:443"},
		{name: "v2 from the proxy, the client's bytes in the same segment", from: "127.0.0.9", send: append(header(t, 2, "[2001:db8::7]:40000", "[2001:db8::1]:443"), "hello"...),
			wantRemote: "[2001:db8::7]:40000", wantLocal: "[2001:db8::1]:443"},
		{name: "a header from a client is not read: its bytes are the connection's", from: "127.0.3.1", send: header(t, 1, "203.0.113.7:40000", "192.0.2.1:443")[:5]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialFrom(t, tc.from, addr)
			if _, err := c.Write(tc.send); err != nil {
				t.Fatal(err)
			}
			remote, local, data := accept(t, l, 5)
			if tc.wantRemote == "" {
				if host, _, _ := net.SplitHostPort(remote); host != tc.from || data != string(tc.send[:5]) {
					t.Errorf("remote %s data %q; want the peer %s and the bytes sent", remote, data, tc.from)
				}
				return
			}
			if remote != tc.wantRemote || local != tc.wantLocal || data != "hello" {
				t.Errorf("remote %s local %s data %q; want %s %s \"hello\"", remote, local, data, tc.wantRemote, tc.wantLocal)
			}
		})
	}

	t.Run("the proxy without a header is closed; a silent one holds up nobody", func(t *testing.T) {
		silent := dialFrom(t, "127.0.0.9", addr)
		_ = silent
		noHeader := dialFrom(t, "127.0.0.9", addr)
		if _, err := noHeader.Write([]byte("\x16\x03\x01 a ClientHello")); err != nil {
			t.Fatal(err)
		}
		// While both wait, a client's connection is accepted at once.
		c := dialFrom(t, "127.0.4.1", addr)
		if _, err := c.Write([]byte("first")); err != nil {
			t.Fatal(err)
		}
		if remote, _, data := accept(t, l, 5); !strings.HasPrefix(remote, "127.0.4.1:") || data != "first" {
			t.Errorf("accepted %s %q, want the client's connection", remote, data)
		}
		for _, c := range []net.Conn{noHeader, silent} {
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := c.Read(make([]byte, 1)); err == nil {
				t.Errorf("%s: the connection without a header was answered, want it closed", c.LocalAddr())
			}
		}
	})

	t.Run("the hub's own dial from the proxy's address sends no header", func(t *testing.T) {
		c := dialFrom(t, "127.0.0.9", addr)
		ownDials.Store(c.LocalAddr().String(), true)
		if _, err := c.Write([]byte("\x16own!")); err != nil {
			t.Fatal(err)
		}
		if remote, _, data := accept(t, l, 5); remote != c.LocalAddr().String() || data != "\x16own!" {
			t.Errorf("accepted %s %q, want the hub's own dial as it is", remote, data)
		}
	})

	t.Run("closed, Accept returns net.ErrClosed", func(t *testing.T) {
		_ = l.Close()
		if _, err := l.Accept(); err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("Accept after Close: %v", err)
		}
	})
}
