package fairness

import (
	"container/list"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/wharfhub/wharf/hub/heaviest"
	"github.com/wharfhub/wharf/hub/login"
)

// ConnLimits are the listener's bounds (see LimitConnections).
type ConnLimits struct {
	// Total bounds the connections held open; 0: none.
	Total int
	// PerAddress bounds them per client address; 0: none.
	PerAddress int
	// HandshakesPerSecond bounds new TLS handshakes hub-wide (its burst is
	// one second's worth), and a fifth of it per address prefix
	// (login.PrefixOf), with the same burst; 0: none. The hub's own
	// address is outside it.
	HandshakesPerSecond float64
	// OwnHandshakeCPUs bounds the handshakes from the hub's own address
	// that compute at once (own.go); 0: none.
	OwnHandshakeCPUs int
	// Own are the hub's in-process clients' connections, never metered.
	Own *OwnDials
}

// connLimit bounds the connections the hub's listener holds open: in
// all, and per client address. The third outside review (C-A) held about
// 24,000 idle TCP connections without TLS or credentials from as many
// addresses, reopening each one the hub closed: the hub reached its
// open-file limit, could no longer reach etcd, and exited. Blocking
// Accept at a bound would keep descriptors for etcd but leave every new
// client waiting behind the idle ones, so past the total a new connection
// takes the place of one the hub has never answered (no TLS handshake
// began): the oldest such of the address prefix (login.PrefixOf) holding
// the most, so that a newcomer from elsewhere, never answered yet either,
// is not closed by the churn of the idle ones; else of the one silent
// longest. A connection
// from the hub's own address (its loopback client, a process on its host)
// is never closed for another and is outside the per-address bound; its
// handshakes take turns of their own (own.go).
//
// It also meters TLS handshakes (C-E: a new connection per request, 60 at
// once, took the CPU): when a connection's first bytes arrive (a
// ClientHello, before any signature is computed) it takes a token of its
// prefix's and of the hub-wide bucket; without one it is closed unread.
// Kept-alive connections are not metered again.
type connLimit struct {
	net.Listener
	total, perAddr int
	hs             *handshakes    // nil: no bound
	ownHS          *ownHandshakes // nil: no bound
	own            *OwnDials

	seq atomic.Uint64 // activity clock: one tick per read or write

	mu     sync.Mutex
	open   int                   // mu
	byAddr map[string]int        // mu
	fresh  *heaviest.Lists       // mu; *limitedConn never written to, by prefix
	others map[*limitedConn]bool // mu; every evictable connection
}

// LimitConnections wraps l with lim's bounds on clock c.
func LimitConnections(l net.Listener, lim ConnLimits, c clock.Clock) net.Listener {
	if lim.Total <= 0 && lim.PerAddress <= 0 && lim.HandshakesPerSecond <= 0 && lim.OwnHandshakeCPUs <= 0 {
		return l
	}
	cl := &connLimit{Listener: l, total: lim.Total, perAddr: lim.PerAddress,
		byAddr: map[string]int{}, fresh: heaviest.New(), others: map[*limitedConn]bool{}, own: lim.Own}
	if lim.HandshakesPerSecond > 0 {
		cl.hs = newHandshakes(lim.HandshakesPerSecond, c)
	}
	if lim.OwnHandshakeCPUs > 0 {
		cl.ownHS = newOwnHandshakes(lim.OwnHandshakeCPUs, c)
	}
	return cl
}

// errHandshakeRefused ends a connection over the handshake bounds.
var errHandshakeRefused = errors.New("too many TLS handshakes from this address")

// Accept returns the next connection within the bounds, closing another
// one past the total.
func (c *connLimit) Accept() (net.Conn, error) {
	for {
		conn, err := c.Listener.Accept()
		if err != nil {
			return nil, err
		}
		// The keep-alive upstream's listener sets, which only sees
		// *net.TCPConn: dead peers' connections go away.
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetKeepAlive(true)
			_ = tc.SetKeepAlivePeriod(3 * time.Minute)
		}
		lc := &limitedConn{Conn: conn, l: c, addr: login.HostOf(conn.RemoteAddr().String())}
		lc.prefix = login.PrefixOf(lc.addr)
		lc.self = conn.LocalAddr() != nil && lc.addr == login.HostOf(conn.LocalAddr().String())
		victim, ok := c.register(lc)
		if !ok {
			connectionsRefused.Inc()
			_ = conn.Close()
			continue
		}
		if victim != nil {
			connectionsEvicted.Inc()
			klog.V(2).InfoS("Closing a connection for a new one: the hub holds its most", "address", victim.addr, "newAddress", lc.addr, "open", c.total)
			_ = victim.Close()
		}
		return lc, nil
	}
}

// register counts lc in, or refuses it past its address's bound; past the
// total it returns the connection to close for it.
func (c *connLimit) register(lc *limitedConn) (victim *limitedConn, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !lc.self {
		if c.perAddr > 0 && c.byAddr[lc.addr] >= c.perAddr {
			return nil, false
		}
		c.byAddr[lc.addr]++
	}
	c.open++
	if c.total > 0 && c.open > c.total {
		victim = c.victimLocked()
	}
	if !lc.self {
		lc.elem = c.fresh.Push(lc.prefix, lc)
		c.others[lc] = true
	}
	return victim, true
}

// victimLocked picks the connection to close: the oldest one never
// answered, else the one silent longest; nil if all are the hub's own.
func (c *connLimit) victimLocked() *limitedConn {
	if v := c.fresh.OldestOfHeaviest(); v != nil {
		return v.(*limitedConn)
	}
	var victim *limitedConn
	for lc := range c.others {
		if victim == nil || lc.active.Load() < victim.active.Load() {
			victim = lc
		}
	}
	return victim
}

func (c *connLimit) answered(lc *limitedConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if lc.elem != nil {
		c.fresh.Remove(lc.prefix, lc.elem)
		lc.elem = nil
	}
}

func (c *connLimit) release(lc *limitedConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open--
	if lc.self {
		return
	}
	if c.byAddr[lc.addr]--; c.byAddr[lc.addr] <= 0 {
		delete(c.byAddr, lc.addr)
	}
	if lc.elem != nil {
		c.fresh.Remove(lc.prefix, lc.elem)
		lc.elem = nil
	}
	delete(c.others, lc)
}

// limitedConn gives its place back once, when closed, and tells its
// listener when it was last active.
type limitedConn struct {
	net.Conn
	l            *connLimit
	addr, prefix string
	self         bool
	elem         *list.Element // l.mu; in l.fresh until first written to

	metered  atomic.Bool   // its first bytes took a handshake token
	answered atomic.Bool   // the hub wrote to it
	active   atomic.Uint64 // l.seq at its last read or write
	once     sync.Once

	// From the hub's own address, its handshake's turns (own.go): recs
	// follows its records until the handshake is over (read side only;
	// nil then, and for every other connection); turn says it holds one.
	recs *tlsRecords
	turn atomic.Bool
}

func (c *limitedConn) Read(b []byte) (int, error) {
	c.computed()
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.active.Store(c.l.seq.Add(1))
		if !c.metered.Load() {
			c.metered.Store(true)
			if !c.l.admitHandshake(c) {
				return c.refuse()
			}
		}
		if c.recs != nil {
			if c.recs.feed(b[:n], c.answered.Load()) {
				c.recs = nil
			} else if peerGone(c.Conn) {
				// Gone already (a ClientHello and a reset): it never
				// waits in line.
				c.recs = nil
				return c.refuse()
			} else if !c.l.ownHS.admit() {
				c.recs = nil
				return c.refuse()
			} else if peerGone(c.Conn) {
				// Gone while it waited: nothing to compute for it.
				c.l.ownHS.done()
				c.recs = nil
				return c.refuse()
			} else {
				c.turn.Store(true)
			}
		}
	}
	return n, err
}

// refuse closes a connection over the handshake bounds unread.
func (c *limitedConn) refuse() (int, error) {
	handshakesRefused.Inc()
	klog.V(2).InfoS("Refusing a TLS handshake: too many from this address", "address", c.addr, "own", c.self)
	_ = c.Close()
	return 0, errHandshakeRefused
}

// computed gives back the own address's handshake turn the connection
// holds: the hub is done computing and waits on the network.
func (c *limitedConn) computed() {
	if c.turn.Load() && c.turn.CompareAndSwap(true, false) {
		c.l.ownHS.done()
	}
}

func (c *limitedConn) Write(b []byte) (int, error) {
	c.computed()
	c.active.Store(c.l.seq.Add(1))
	if !c.answered.Load() {
		c.answered.Store(true)
		c.l.answered(c)
	}
	return c.Conn.Write(b)
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.computed()
	c.once.Do(func() { c.l.release(c) })
	return err
}

// admitHandshake meters lc's first bytes: nothing for the hub's own
// dials; its handshake's turns (Read) for its own address; else a token
// of its prefix's and of the hub-wide bucket.
func (c *connLimit) admitHandshake(lc *limitedConn) bool {
	switch {
	case c.own.has(lc.RemoteAddr().String()):
		return true
	case lc.self:
		if c.ownHS != nil {
			lc.recs = &tlsRecords{}
		}
		return true
	case c.hs != nil:
		return c.hs.admit(lc.prefix)
	default:
		return true
	}
}

// handshakes meters new TLS handshakes per address prefix and hub-wide.
// Over the hub-wide bucket, a prefix whose own bucket is full (it has
// been quiet: a kubelet probing, a new client) still gets one through, and
// pays its whole burst for it: one rotating over many prefixes gets each
// through once per refill, not once per token.
type handshakes struct {
	perPrefix, total *login.RateLimiter
}

// A prefix's burst is the hub-wide one: a client that was quiet may open
// many connections at once (an edge agent's revdial pickups, a browser),
// and only a sustained rate past a fifth of the hub's is refused.
func newHandshakes(perSecond float64, c clock.Clock) *handshakes {
	per := max(perSecond/5, 1)
	return &handshakes{
		perPrefix: login.NewRateLimiter(per, max(int(perSecond), 1), 10000, nil, c),
		total:     login.NewRateLimiter(perSecond, max(int(perSecond), 1), 1, nil, c),
	}
}

func (h *handshakes) admit(prefix string) bool {
	return admitQuiet(h.perPrefix, h.total, prefix)
}

// admitQuiet takes a token of prefix's bucket and of the hub-wide one;
// without a hub-wide token, a prefix that was untouched passes and
// drains its bucket.
func admitQuiet(perPrefix, total *login.RateLimiter, prefix string) bool {
	quiet := perPrefix.Untouched(prefix)
	if !perPrefix.Allow(prefix) {
		return false
	}
	if total.Allow(hubWideKey) {
		return true
	}
	if quiet {
		perPrefix.Drain(prefix)
		return true
	}
	return false
}

// hubWideKey is the one key of a hub-wide bucket.
const hubWideKey = "*"
