package fairness

import (
	"net"
	"sync"
)

// connLimit bounds the connections the hub's listener holds open: in
// all, and per client address. The third outside review (C-A) held about
// 24,000 idle TCP connections without TLS or credentials, reopening each
// one the hub closed: the hub reached its open-file limit, could no
// longer reach etcd, and exited. Past the total, Accept waits for a
// connection to close (new clients wait in the kernel's backlog), so the
// descriptors left over stay for etcd, plugins and files. Past the
// per-address bound, a new connection is closed at once.
type connLimit struct {
	net.Listener
	slots   chan struct{} // one per open connection; nil: no total bound
	perAddr int           // 0: no bound

	mu     sync.Mutex
	byAddr map[string]int // mu
}

// LimitConnections wraps l; total and perAddr of 0 mean no bound.
func LimitConnections(l net.Listener, total, perAddr int) net.Listener {
	if total <= 0 && perAddr <= 0 {
		return l
	}
	c := &connLimit{Listener: l, perAddr: perAddr, byAddr: map[string]int{}}
	if total > 0 {
		c.slots = make(chan struct{}, total)
	}
	return c
}

// Accept returns the next connection within both bounds.
func (c *connLimit) Accept() (net.Conn, error) {
	for {
		if c.slots != nil {
			c.slots <- struct{}{}
		}
		conn, err := c.Listener.Accept()
		if err != nil {
			c.free()
			return nil, err
		}
		addr := hostOf(conn.RemoteAddr())
		if !c.admit(addr) {
			_ = conn.Close()
			c.free()
			continue
		}
		return &limitedConn{Conn: conn, release: sync.OnceFunc(func() { c.leave(addr); c.free() })}, nil
	}
}

func (c *connLimit) free() {
	if c.slots != nil {
		<-c.slots
	}
}

func (c *connLimit) admit(addr string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.perAddr > 0 && c.byAddr[addr] >= c.perAddr {
		return false
	}
	c.byAddr[addr]++
	return true
}

func (c *connLimit) leave(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byAddr[addr]--; c.byAddr[addr] <= 0 {
		delete(c.byAddr, addr)
	}
}

func hostOf(a net.Addr) string {
	if a == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// limitedConn gives its slot back once, when closed.
type limitedConn struct {
	net.Conn
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}
