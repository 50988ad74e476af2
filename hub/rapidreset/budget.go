package rapidreset

import (
	"net"
	"sync"
	"sync/atomic"

	"golang.org/x/time/rate"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Budgets hold each client connection's budget of streams cancelled
// before their answer; Listener registers the connections and Filter
// charges and closes them.
type Budgets struct {
	opts   Options
	clock  clock.PassiveClock
	exempt func(remote string) bool
	conns  sync.Map // remote address (a request's RemoteAddr) -> *conn
}

// New returns the budgets of o on clock c. exempt (may be nil) names
// the connections, by remote address, never closed: the hub's own.
func New(o Options, exempt func(remote string) bool, c clock.PassiveClock) *Budgets {
	return &Budgets{opts: o, clock: c, exempt: exempt}
}

func (b *Budgets) enabled() bool { return b != nil && b.opts.Burst > 0 }

// Listener wraps l so that Filter finds each of its connections by the
// remote address its requests carry. With no bound it returns l.
func (b *Budgets) Listener(l net.Listener) net.Listener {
	if !b.enabled() {
		return l
	}
	return &listener{Listener: l, b: b}
}

type listener struct {
	net.Listener
	b *Budgets
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &conn{Conn: c, b: l.b, key: c.RemoteAddr().String(),
		bucket: rate.NewLimiter(rate.Limit(l.b.opts.PerSecond), l.b.opts.Burst)}
	if l.b.opts.Unanswered > 0 {
		tc.slots = make(chan struct{}, l.b.opts.Unanswered)
	}
	l.b.conns.Store(tc.key, tc)
	return tc, nil
}

// conn is one client connection and its budget.
type conn struct {
	net.Conn
	b      *Budgets
	key    string
	bucket *rate.Limiter
	// slots holds a token for each of its streams in the chain whose
	// answer has not begun; nil: no bound.
	slots chan struct{}
	// own: the hub's own dial (decided at its first request, when the
	// dialer has surely recorded it).
	ownOnce sync.Once
	own     bool
	// gone: the client hung up (a read failed). Its streams are all
	// cancelled then, which is no reset of theirs.
	gone    atomic.Bool
	closing atomic.Bool
	once    sync.Once
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.gone.Store(true)
	}
	return n, err
}

// Close forgets the connection before its address can be reused.
func (c *conn) Close() error {
	c.gone.Store(true)
	c.once.Do(func() { c.b.conns.CompareAndDelete(c.key, c) })
	return c.Conn.Close()
}

// exempted reports whether c is one of the hub's own connections.
func (b *Budgets) exempted(c *conn) bool {
	c.ownOnce.Do(func() { c.own = b.exempt != nil && b.exempt(c.key) })
	return c.own
}

// connOf returns the connection a request with this RemoteAddr came on.
func (b *Budgets) connOf(remote string) *conn {
	v, ok := b.conns.Load(remote)
	if !ok {
		return nil
	}
	return v.(*conn)
}

// reset charges one stream cancelled before its answer to c, and closes
// c when its budget is spent.
func (b *Budgets) reset(c *conn) {
	if c.gone.Load() {
		return
	}
	streamsReset.Inc()
	if c.bucket.AllowN(b.clock.Now(), 1) {
		return
	}
	if b.exempted(c) {
		return
	}
	if !c.closing.CompareAndSwap(false, true) {
		return
	}
	connsClosed.Inc()
	klog.V(2).InfoS("Closing a connection that cancelled too many HTTP/2 streams before their answer", "address", c.key,
		"burst", b.opts.Burst, "perSecond", b.opts.PerSecond)
	_ = c.Close()
}
