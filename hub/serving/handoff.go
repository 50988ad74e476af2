package serving

import (
	"errors"
	"fmt"
	"net"
	"sync"
)

// Handoff lets a Server serve the real listener while k8s.io/apiserver's
// generic server keeps its whole lifecycle. The generic server is given
// the Handoff as its SecureServingInfo.Listener: it never accepts a
// connection, and stands for the real listener:
//
//   - Addr is the real listener's, so the loopback client and upstream's
//     logs see the real port;
//   - Close, which the generic server's own http.Server calls when it
//     stops listening (once ShutdownDelayDuration and the pre-shutdown
//     hooks are over), stops the Server, which shuts down with its
//     ShutdownTimeout;
//   - Accept returns only once the Server has stopped listening and its
//     graceful shutdown is over, so that the generic server's
//     listenerStoppedCh and stoppedCh, which it waits for before
//     RunWithContext returns, close after the Server's.
type Handoff struct {
	real net.Listener

	stop     chan struct{} // closed by Close
	stopOnce sync.Once
	done     chan struct{} // closed once nothing serves real any more

	mu      sync.Mutex // guards server and started
	server  *Server
	started bool
}

var _ net.Listener = (*Handoff)(nil)

// NewHandoff returns the stand-in for real.
func NewHandoff(real net.Listener) *Handoff {
	return &Handoff{real: real, stop: make(chan struct{}), done: make(chan struct{})}
}

// SetServer names the server that will serve the real listener. It starts
// when the generic server begins to serve (its first Accept): after
// upstream's own start-up steps, as upstream's server would.
func (h *Handoff) SetServer(s *Server) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.server = s
}

// Accept starts the server at its first call, then blocks until the
// server is done and fails as a closed listener. If the server cannot
// start, it fails with the reason and the generic server stops listening
// (upstream then panics, as for a listener that fails).
func (h *Handoff) Accept() (net.Conn, error) {
	if err := h.start(); err != nil {
		return nil, err
	}
	<-h.done
	return nil, net.ErrClosed
}

func (h *Handoff) start() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.started {
		return nil
	}
	select {
	case <-h.stop:
		return nil // Close has closed done
	default:
	}
	if h.server == nil {
		return errors.New("serving: the handoff has no server")
	}
	stopped, listenerStopped, err := h.server.Serve(h.real, h.stop)
	if err != nil {
		return fmt.Errorf("serving %s: %w", h.real.Addr(), err)
	}
	h.started = true
	go func() {
		<-listenerStopped
		<-stopped
		close(h.done)
	}()
	return nil
}

// Close stops the server (gracefully, in the background) and returns at
// once: the generic server calls it holding its own server's lock. Closing
// a Handoff whose server never started closes the real listener.
func (h *Handoff) Close() error {
	h.stopOnce.Do(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		close(h.stop)
		if !h.started {
			_ = h.real.Close()
			close(h.done)
		}
	})
	return nil
}

// Addr is the real listener's address.
func (h *Handoff) Addr() net.Addr { return h.real.Addr() }

// Done is closed once the server has stopped listening and shut down (or
// the Handoff was closed before it started).
func (h *Handoff) Done() <-chan struct{} { return h.done }
