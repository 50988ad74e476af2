package h2guard

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"golang.org/x/time/rate"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// ErrClosed is what Read returns once the guard closed a connection.
var ErrClosed = errors.New("h2guard: connection closed")

// maxStringLength bounds one HPACK string in the guard's decoder: above
// any server's header list bound (1 MiB by default), so the guard never
// fails a block the server would take; with MaxBlockBytes it bounds the
// decoder's buffer of an incomplete field.
const maxStringLength = 16 << 20

// freshBytes is what a new connection's budget holds at first: one head
// of the apiserver's 1 MiB MaxHeaderBytes with its frames, and slack.
const freshBytes = 1<<20 + 64<<10

// Guard wraps each HTTP/2 connection of a server with the bounds of
// Options; it holds the hub-wide count of bytes in open header blocks.
type Guard struct {
	opts   Options
	exempt func(remoteAddr string) bool
	clock  clock.Clock
	// held is the bytes of open header blocks past FreeBlockBytes each,
	// on every connection.
	held atomic.Int64
	// freed is closed, and replaced, whenever held falls: connections
	// waiting for room try again.
	mu    sync.Mutex
	freed chan struct{}
}

// New returns a guard of o on clock clk. exempt (may be nil) names the
// connections, by remote address, never guarded: the hub's own.
func New(opts Options, exempt func(remoteAddr string) bool, clk clock.Clock) *Guard {
	if opts.HeaderTableSize == 0 {
		opts.HeaderTableSize = DefaultHeaderTableSize
	}
	return &Guard{opts: opts, exempt: exempt, clock: clk, freed: make(chan struct{})}
}

func (g *Guard) enabled() bool {
	o := g.opts
	return g != nil && (o.Burst > 0 || o.MaxBlockBytes > 0 || o.BlockTimeout > 0 || o.MaxOpenBlockBytes > 0)
}

// Wrap returns c guarded, to be given to http2.Server.ServeConn before it
// reads the client preface. c is normally the *tls.Conn; the result's
// ConnectionState is c's. An exempt connection, or any with every bound
// off, is returned as it is.
func (g *Guard) Wrap(c net.Conn) net.Conn {
	if !g.enabled() || (g.exempt != nil && g.exempt(c.RemoteAddr().String())) {
		return c
	}
	gc := &conn{Conn: c, g: g, preface: len(http2.ClientPreface), done: make(chan struct{})}
	if g.opts.Burst > 0 {
		gc.bucket = rate.NewLimiter(rate.Limit(g.opts.PerSecond), g.opts.Burst)
		// A fresh connection may send one head of the server's bound
		// at once, not two: an attacker who dials again for every
		// budget gets half as much for each TLS handshake. The rest
		// of the burst fills at the refill rate.
		if fresh := min(g.opts.Burst, freshBytes); fresh < g.opts.Burst {
			gc.bucket.AllowN(g.clock.Now(), g.opts.Burst-fresh)
		}
		gc.dec = hpack.NewDecoder(g.opts.HeaderTableSize, gc.emit)
		gc.dec.SetMaxStringLength(maxStringLength)
	}
	return gc
}

// reserve counts n more bytes held hub-wide, or reports that they would
// pass the bound and counts nothing.
func (g *Guard) reserve(n int64) bool {
	if g.opts.MaxOpenBlockBytes <= 0 {
		return true
	}
	if g.held.Add(n) > g.opts.MaxOpenBlockBytes {
		g.held.Add(-n)
		return false
	}
	openBlockBytes.Add(float64(n))
	return true
}

func (g *Guard) unreserve(n int64) {
	if n != 0 {
		g.held.Add(-n)
		openBlockBytes.Add(-float64(n))
		g.mu.Lock()
		close(g.freed)
		g.freed = make(chan struct{})
		g.mu.Unlock()
	}
}

// freedCh is closed when held next falls.
func (g *Guard) freedCh() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.freed
}

// closedError is Read's error on a connection the guard closed.
type closedError struct{ reason string }

func (e *closedError) Error() string { return fmt.Sprintf("%v (%s)", ErrClosed, e.reason) }
func (e *closedError) Unwrap() error { return ErrClosed }

// kill closes c for reason, once, and returns the error Read reports.
// It closes the connection beneath TLS: a close_notify could wait up
// to 5 s on a client that does not read, and an attacker needs none.
func (c *conn) kill(reason string) error {
	c.mu.Lock()
	first := c.reason == ""
	if first {
		c.reason = reason
	}
	reason = c.reason
	c.mu.Unlock()
	if first {
		connsClosed.WithLabelValues(reason).Inc()
		klog.V(2).InfoS("Closing an HTTP/2 connection below the server", "address", c.RemoteAddr().String(), "reason", reason)
		c.release()
		c.doneOnce.Do(func() { close(c.done) })
		if nc, ok := c.Conn.(interface{ NetConn() net.Conn }); ok {
			_ = nc.NetConn().Close()
		} else {
			_ = c.Conn.Close()
		}
	}
	return &closedError{reason: reason}
}

// ConnectionState is the TLS state of the wrapped connection: the HTTP/2
// server fills each request's TLS field from it.
func (c *conn) ConnectionState() tls.ConnectionState {
	if s, ok := c.Conn.(interface{ ConnectionState() tls.ConnectionState }); ok {
		return s.ConnectionState()
	}
	return tls.ConnectionState{}
}

// Close gives back what the connection held hub-wide.
func (c *conn) Close() error {
	c.release()
	c.doneOnce.Do(func() { close(c.done) })
	return c.Conn.Close()
}

// release ends the open block's hub-wide count and its timer.
func (c *conn) release() {
	c.mu.Lock()
	n := c.reserved
	c.reserved = 0
	c.gen++
	t := c.timer
	c.timer = nil
	c.mu.Unlock()
	if t != nil {
		t.Stop()
	}
	c.g.unreserve(n)
}

// closedErr is the error of a connection already closed by the guard.
func (c *conn) closedErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reason != "" {
		return &closedError{reason: c.reason}
	}
	return nil
}
