package edges

import (
	"io"
	"net"
	"sync"
	"testing"
)

// relay is a TCP relay between an agent and the hub that a test can cut.
// Blackhole models what NAT boxes and middleboxes do to idle tunnels: the
// connections stay open but no byte passes either way, and new ones are
// accepted and go nowhere. Only the agents' and the provider's read
// deadlines can notice that. Restore drops the black-holed connections
// (as a rebooted middlebox would) and forwards new ones again.
type relay struct {
	Addr string
	ln   net.Listener

	mu        sync.Mutex
	dest      string // where new connections go (Retarget changes it)
	blackhole bool
	conns     map[net.Conn]bool // both sides of every live pair
}

func startRelay(t *testing.T, target string) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{Addr: ln.Addr().String(), dest: target, ln: ln, conns: map[net.Conn]bool{}}
	go r.accept()
	t.Cleanup(func() {
		_ = ln.Close()
		r.closeAll()
	})
	return r
}

func (r *relay) accept() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.mu.Lock()
		hole := r.blackhole
		r.conns[c] = true
		r.mu.Unlock()
		if hole {
			go r.swallow(c)
			continue
		}
		go r.pipe(c)
	}
}

func (r *relay) pipe(c net.Conn) {
	r.mu.Lock()
	dest := r.dest
	r.mu.Unlock()
	up, err := net.Dial("tcp", dest)
	if err != nil {
		r.drop(c)
		return
	}
	r.mu.Lock()
	r.conns[up] = true
	r.mu.Unlock()
	go r.copyThenClose(up, c)
	r.copyThenClose(c, up)
}

// copyThenClose forwards src to dst; when src ends it closes both, except
// during a black hole: then only src is closed and dst hears nothing, as
// behind a middlebox that dropped the flow.
func (r *relay) copyThenClose(dst, src net.Conn) {
	r.copy(dst, src)
	r.mu.Lock()
	hole := r.blackhole
	r.mu.Unlock()
	r.drop(src)
	if !hole {
		r.drop(dst)
	}
}

// copy forwards src to dst until either fails, or discards src's bytes
// while the relay is black-holed.
func (r *relay) copy(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			r.mu.Lock()
			hole := r.blackhole
			r.mu.Unlock()
			if !hole {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// swallow reads and discards until the connection is closed.
func (r *relay) swallow(c net.Conn) {
	_, _ = io.Copy(io.Discard, c)
	r.drop(c)
}

func (r *relay) drop(c net.Conn) {
	_ = c.Close()
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
}

// Blackhole silently cuts every connection, present and future.
func (r *relay) Blackhole() {
	r.mu.Lock()
	r.blackhole = true
	r.mu.Unlock()
}

// Restore closes the black-holed connections and forwards again.
func (r *relay) Restore() {
	r.mu.Lock()
	r.blackhole = false
	all := r.takeLocked()
	r.mu.Unlock()
	for _, c := range all {
		_ = c.Close()
	}
}

// Retarget sends new connections to addr; current ones stay where they
// are.
func (r *relay) Retarget(addr string) {
	r.mu.Lock()
	r.dest = addr
	r.mu.Unlock()
}

// Sever closes every current connection (both sides see a reset/EOF) and
// keeps forwarding new ones.
func (r *relay) Sever() { r.closeAll() }

func (r *relay) closeAll() {
	r.mu.Lock()
	all := r.takeLocked()
	r.mu.Unlock()
	for _, c := range all {
		_ = c.Close()
	}
}

// takeLocked empties the connection set and returns what it held.
func (r *relay) takeLocked() []net.Conn {
	var all []net.Conn
	for c := range r.conns {
		all = append(all, c)
	}
	r.conns = map[net.Conn]bool{}
	return all
}

// count is the number of live connections (both sides counted).
func (r *relay) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.conns)
}
