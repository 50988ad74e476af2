package proxied

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/pires/go-proxyproto"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
)

var refused = metrics.NewCounter(&metrics.CounterOpts{Name: "wharf_proxy_protocol_refused_total",
	Help:           "Connections from --proxy-protocol-cidrs closed because they did not begin with a valid PROXY protocol header in time.",
	StabilityLevel: metrics.ALPHA})

func init() {
	// legacyregistry is the registry the apiserver's /metrics serves.
	legacyregistry.MustRegister(refused)
}

// maxPending bounds the headers being read at once; past it the accept
// loop waits (a listed peer is a proxy, which sends its header at once).
const maxPending = 1024

// Listener returns l reading a PROXY header first from every connection
// whose peer is in nets, within timeout; own reports the hub's own dials
// (by the peer's ip:port as the listener sees it), which never send one.
// With no nets it returns l.
func Listener(l net.Listener, nets []*net.IPNet, timeout time.Duration, own func(remote string) bool) net.Listener {
	if len(nets) == 0 {
		return l
	}
	pl := &listener{Listener: l, nets: nets, timeout: timeout, own: own,
		pending: make(chan struct{}, maxPending), ready: make(chan accepted), done: make(chan struct{})}
	go pl.loop()
	return pl
}

type listener struct {
	net.Listener
	nets    []*net.IPNet
	timeout time.Duration
	own     func(string) bool

	pending   chan struct{} // a place per header being read
	ready     chan accepted // to Accept
	done      chan struct{} // closed by Close
	closeOnce sync.Once
}

type accepted struct {
	c   net.Conn
	err error
}

// Accept returns the next connection whose header, if it owes one, is
// read.
func (l *listener) Accept() (net.Conn, error) {
	select {
	case a := <-l.ready:
		return a.c, a.err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops the accept loop and closes l.
func (l *listener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// loop accepts connections and hands them to Accept: at once from other
// peers, after their header from listed ones. An error is handed on too;
// handing it waits for the next Accept, so the server's backoff after a
// temporary error (too many open files) paces the loop.
func (l *listener) loop() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if !l.deliver(accepted{err: err}) || errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if !l.listed(c.RemoteAddr()) {
			if !l.deliver(accepted{c: c}) {
				return
			}
			continue
		}
		select {
		case l.pending <- struct{}{}:
		case <-l.done:
			_ = c.Close()
			return
		}
		go func() {
			defer func() { <-l.pending }()
			pc, err := l.readHeader(c)
			if err != nil {
				refused.Inc()
				klog.V(2).InfoS("Closed a connection without a PROXY header", "peer", c.RemoteAddr().String(), "err", err)
				_ = c.Close()
				return
			}
			l.deliver(accepted{c: pc})
		}()
	}
}

// deliver hands a to Accept; false (a's connection closed) once l is
// closed.
func (l *listener) deliver(a accepted) bool {
	select {
	case l.ready <- a:
		return true
	case <-l.done:
		if a.c != nil {
			_ = a.c.Close()
		}
		return false
	}
}

func (l *listener) listed(a net.Addr) bool {
	t, ok := a.(*net.TCPAddr)
	if !ok {
		return false
	}
	for _, n := range l.nets {
		if n.Contains(t.IP) {
			return true
		}
	}
	return false
}

// readHeader reads c's PROXY header and returns c with the addresses it
// names.
func (l *listener) readHeader(c net.Conn) (net.Conn, error) {
	if err := c.SetReadDeadline(time.Now().Add(l.timeout)); err != nil {
		return nil, fmt.Errorf("set deadline: %w", err)
	}
	br := bufio.NewReaderSize(c, 256)
	// The hub's own dial is registered before it sends its first byte
	// (the ClientHello), so wait for that byte before asking.
	if _, err := br.Peek(1); err != nil {
		return nil, fmt.Errorf("before a header: %w", err)
	}
	pc := &conn{Conn: c, r: br, remote: c.RemoteAddr(), local: c.LocalAddr()}
	if l.own == nil || !l.own(c.RemoteAddr().String()) {
		h, err := proxyproto.Read(br)
		if err != nil {
			return nil, fmt.Errorf("read header: %w", err)
		}
		if h.Command.IsProxy() {
			// A LOCAL header is the proxy's own connection (a health
			// check): it keeps the proxy's address, as does one naming
			// no internet address.
			if a, ok := h.SourceAddr.(*net.TCPAddr); ok {
				pc.remote = a
			}
			if a, ok := h.DestinationAddr.(*net.TCPAddr); ok {
				pc.local = a
			}
		}
	}
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("clear deadline: %w", err)
	}
	return pc, nil
}

// conn is a connection whose header is read: it serves what was read past
// the header first, and names the header's addresses.
type conn struct {
	net.Conn
	r             *bufio.Reader // nil once drained
	remote, local net.Addr
}

func (c *conn) Read(b []byte) (int, error) {
	if c.r != nil {
		if n := c.r.Buffered(); n > 0 {
			return c.r.Read(b[:min(len(b), n)])
		}
		c.r = nil
	}
	return c.Conn.Read(b)
}

func (c *conn) RemoteAddr() net.Addr { return c.remote }
func (c *conn) LocalAddr() net.Addr  { return c.local }

// SyscallConn is the socket's, for looks at it that read nothing
// (hub/fairness peerGone).
func (c *conn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.New("not a socket")
	}
	return sc.SyscallConn()
}
