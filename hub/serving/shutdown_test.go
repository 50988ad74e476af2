package serving

import (
	"errors"
	"net"
	"testing"
)

// TestGracefulShutdown: once stopped, the server listens no more, lets the
// request in flight finish, then reports itself stopped.
func TestGracefulShutdown(t *testing.T) {
	for _, tc := range []struct {
		name string
		h2   bool
	}{{name: "h2", h2: true}, {name: "HTTP/1.1"}} {
		t.Run(tc.name, func(t *testing.T) {
			f := start(t, setup{hook: true})
			type result struct {
				body string
				err  error
			}
			done := make(chan result, 1)
			go func() {
				body, err := f.get(t, f.client(tc.h2, nil), "/slow")
				done <- result{body, err}
			}()
			<-f.entered
			close(f.stop)
			<-f.listenerStopped
			if c, err := net.Dial("tcp", f.addr); err == nil {
				_ = c.Close()
				t.Fatal("the stopped server still accepts connections")
			}
			select {
			case <-f.stopped:
				t.Fatal("the server stopped with a request in flight")
			default:
			}
			close(f.release)
			r := <-done
			if r.err != nil {
				t.Fatalf("the request in flight failed: %v", r.err)
			}
			<-f.stopped
		})
	}
}

// TestHandoff: the stand-in has the real address and accepts nothing; its
// Accept returns once the server it stands for is done.
func TestHandoff(t *testing.T) {
	f := start(t, setup{hook: true, handoff: true})
	if got := f.handoff.Addr().String(); got != f.addr {
		t.Fatalf("handoff address %s, want %s", got, f.addr)
	}
	// Served through the real listener while the stand-in accepts nothing.
	if _, err := f.get(t, f.client(true, nil), "/"); err != nil {
		t.Fatal(err)
	}
	if err := f.handoff.Close(); err != nil {
		t.Fatal(err)
	}
	err := <-f.accepted
	if !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept: %v, want net.ErrClosed", err)
	}
	select {
	case <-f.handoff.Done():
	default:
		t.Fatal("Accept returned before the server was done")
	}
	if c, err := net.Dial("tcp", f.addr); err == nil {
		_ = c.Close()
		t.Fatal("the real listener still accepts after the handoff closed")
	}
}

// TestHandoffNeverStarted: closing a handoff whose server never started
// closes the real listener and releases Accept.
func TestHandoffNeverStarted(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandoff(ln)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept: %v, want net.ErrClosed", err)
	}
	h.SetServer(&Server{})
	if _, err := h.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after a server was set: %v, want net.ErrClosed", err)
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		_ = c.Close()
		t.Fatal("the real listener still accepts")
	}
}

// TestHandoffWithoutServer: a handoff nobody gave a server fails its
// Accept, which stops the generic server's listener loop.
func TestHandoffWithoutServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandoff(ln)
	defer func() { _ = h.Close() }()
	if _, err := h.Accept(); err == nil || errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept without a server: %v, want an error naming why", err)
	}
}
