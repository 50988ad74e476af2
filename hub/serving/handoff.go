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

	mu      sync.Mutex // guards started
	started bool
}

var _ net.Listener = (*Handoff)(nil)

// NewHandoff returns the stand-in for real.
func NewHandoff(real net.Listener) *Handoff {
	return &Handoff{real: real, stop: make(chan struct{}), done: make(chan struct{})}
}

// Start serves the real listener with s until the Handoff is closed.
func (h *Handoff) Start(s *Server) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.started {
		return errors.New("serving: the handoff's server is already started")
	}
	select {
	case <-h.stop:
		return errors.New("serving: the handoff is closed")
	default:
	}
	stopped, listenerStopped, err := s.Serve(h.real, h.stop)
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

// Accept blocks until the Server is done, then fails as a closed listener.
func (h *Handoff) Accept() (net.Conn, error) {
	<-h.done
	return nil, net.ErrClosed
}

// Close stops the Server (gracefully, in the background) and returns at
// once: the generic server calls it holding its own server's lock. Closing
// a Handoff whose Server never started closes the real listener.
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

// Done is closed once the Server has stopped listening and shut down.
func (h *Handoff) Done() <-chan struct{} { return h.done }
