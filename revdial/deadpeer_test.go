package revdial

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// blackhole is a loopback TCP proxy that can go silent: after freeze it
// keeps every socket open but drops all bytes, like a NAT box or load
// balancer that forgot the flow. No FIN, no RST, no close frame.
type blackhole struct {
	ln     net.Listener
	target string
	frozen atomic.Bool
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

func newBlackhole(t testing.TB, target string) *blackhole {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackhole{ln: ln, target: target}
	b.wg.Add(1)
	go b.accept()
	t.Cleanup(b.close)
	return b
}

func (b *blackhole) addr() string { return b.ln.Addr().String() }

func (b *blackhole) accept() {
	defer b.wg.Done()
	for {
		in, err := b.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", b.target)
		if err != nil {
			in.Close()
			continue
		}
		b.mu.Lock()
		b.conns = append(b.conns, in, out)
		b.mu.Unlock()
		b.wg.Add(2)
		go b.pipe(in, out)
		go b.pipe(out, in)
	}
}

func (b *blackhole) pipe(dst, src net.Conn) {
	defer b.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !b.frozen.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err == io.EOF && !b.frozen.Load() {
				_ = dst.(*net.TCPConn).CloseWrite()
			}
			return
		}
	}
}

// reset drops every proxied connection with a TCP reset: the agent's
// process or host died, and again no close frame was sent.
func (b *blackhole) reset() {
	b.frozen.Store(true)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.conns {
		_ = c.(*net.TCPConn).SetLinger(0)
		c.Close()
	}
}

func (b *blackhole) close() {
	b.ln.Close()
	b.mu.Lock()
	for _, c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// TestDeadPeer: the agent's connection dies without a close frame, either
// silently (an intermediary forgot the flow) or with a reset. The hub must
// declare the tunnel dead (within the read deadline in the silent case) and
// fail every pending dial; the agent must notice too.
func TestDeadPeer(t *testing.T) {
	tests := []struct {
		name string
		kill func(*blackhole)
	}{
		{"silent", func(b *blackhole) { b.frozen.Store(true) }},
		{"reset", (*blackhole).reset},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { testDeadPeer(t, tc.kill) })
	}
}

func testDeadPeer(t *testing.T, kill func(*blackhole)) {
	noLeaks(t)
	opts := fastOptions()
	opts.KeepAliveInterval = 200 * time.Millisecond
	opts.ReadDeadline = time.Second
	opts.PickupWait = time.Hour // pending dials may only fail through tunnel death
	h := newHub(t, opts)
	bh := newBlackhole(t, h.hs.Listener.Addr().String())
	h.via = bh.addr()
	ln, d := h.agent("a1", opts, nil)
	serve(t, ln, echo)

	c, err := d.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := roundTrip(c, "alive"); err != nil || got != "alive" {
		t.Fatalf("before freeze: %q, %v", got, err)
	}
	c.Close()

	kill(bh)
	frozeAt := time.Now()
	const pending = 5
	errc := make(chan error, pending)
	for i := 0; i < pending; i++ {
		go func() {
			c, err := d.Dial(context.Background())
			if c != nil {
				c.Close()
			}
			errc <- err
		}()
	}
	<-d.Done()
	t.Logf("hub declared the tunnel dead %v after the kill (read deadline %v)", time.Since(frozeAt), opts.ReadDeadline)
	for i := 0; i < pending; i++ {
		if err := <-errc; !errors.Is(err, ErrTunnelClosed) {
			t.Errorf("pending dial returned %v, want ErrTunnelClosed", err)
		}
	}
	if !errors.Is(d.Err(), ErrTunnelClosed) {
		t.Errorf("Err() = %v", d.Err())
	}
	<-ln.Done()
	if !errors.Is(ln.Err(), net.ErrClosed) {
		t.Errorf("agent listener Err() = %v, want net.ErrClosed", ln.Err())
	}
	if _, ok := h.srv.Dialer("a1"); ok {
		t.Error("dead dialer still registered")
	}
	if n := h.srv.Stats().LiveTunnels; n != 0 {
		t.Errorf("LiveTunnels = %d", n)
	}
}
