package idleconns

import (
	"container/list"
	"net"
	"net/http"
	"sync"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/wharfhub/wharf/hub/heaviest"
	"github.com/wharfhub/wharf/hub/login"
)

// Tracker holds the connections that have not begun a request; Listener
// registers them and Filter marks them begun.
type Tracker struct {
	opts   Options
	clock  clock.WithDelayedExecution
	exempt func(remote string) bool

	mu      sync.RWMutex
	waiting *heaviest.Lists  // mu; *conn not begun, oldest first, by address prefix
	byAddr  map[string]*conn // mu; the same, by remote address
}

// New returns the tracker of o on clock c. exempt (may be nil) names the
// connections, by remote address, never closed: the hub's own.
func New(o Options, exempt func(remote string) bool, c clock.WithDelayedExecution) *Tracker {
	return &Tracker{opts: o, clock: c, exempt: exempt, waiting: heaviest.New(), byAddr: map[string]*conn{}}
}

func (t *Tracker) enabled() bool { return t != nil && (t.opts.Timeout > 0 || t.opts.Max > 0) }

// Listener wraps l so that its connections are tracked until their first
// request. With no bound it returns l.
func (t *Tracker) Listener(l net.Listener) net.Listener {
	if !t.enabled() {
		return l
	}
	return &listener{Listener: l, t: t}
}

type listener struct {
	net.Listener
	t *Tracker
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	key := c.RemoteAddr().String()
	tc := &conn{Conn: c, t: l.t, key: key, prefix: login.PrefixOf(login.HostOf(key))}
	if victim := l.t.add(tc); victim != nil {
		closedWithoutRequest.WithLabelValues("bound").Inc()
		klog.V(3).InfoS("Closing a connection that has not begun a request: too many such", "address", victim.key, "max", l.t.opts.Max)
		_ = victim.Close()
	}
	return tc, nil
}

// add tracks c; past the bound it returns the oldest connection not
// begun of the address prefix holding the most, to close, forgetting the
// hub's own ones it meets on the way. Of the prefix holding the most, not
// hub-wide: the tenth outside review's churn of connections that sent a
// ClientHello and nothing more, 8,000 a second from one address, turned
// the bound's places over faster than anyone else's handshake, and so
// closed every newcomer's connection, from any address, before its first
// request.
func (t *Tracker) add(c *conn) (victim *conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.byAddr[c.key]; ok {
		// The address of a connection closed under us, reused.
		t.forgetLocked(old)
	}
	c.elem = t.waiting.Push(c.prefix, c)
	t.byAddr[c.key] = c
	if t.opts.Timeout > 0 {
		// A goroutine of its own: a fake clock runs the function under
		// its lock, which Stop takes too.
		c.timer = t.clock.AfterFunc(t.opts.Timeout, func() { go t.expire(c) })
	}
	for t.opts.Max > 0 && t.waiting.Len() > t.opts.Max {
		v := t.waiting.OldestOfHeaviest().(*conn)
		t.forgetLocked(v)
		if !t.own(v) {
			victim = v
			break
		}
	}
	withoutRequest.Set(float64(t.waiting.Len()))
	return victim
}

// forgetLocked stops tracking c.
func (t *Tracker) forgetLocked(c *conn) {
	if c.elem == nil {
		return
	}
	t.waiting.Remove(c.prefix, c.elem)
	c.elem = nil
	if t.byAddr[c.key] == c {
		delete(t.byAddr, c.key)
	}
	if c.timer != nil {
		c.timer.Stop()
	}
}

func (t *Tracker) forget(c *conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forgetLocked(c)
	withoutRequest.Set(float64(t.waiting.Len()))
}

func (t *Tracker) own(c *conn) bool { return t.exempt != nil && t.exempt(c.key) }

// expire closes c if it has not begun a request by now.
func (t *Tracker) expire(c *conn) {
	t.mu.Lock()
	if c.elem == nil {
		t.mu.Unlock()
		return
	}
	t.forgetLocked(c)
	withoutRequest.Set(float64(t.waiting.Len()))
	t.mu.Unlock()
	if t.own(c) {
		return
	}
	closedWithoutRequest.WithLabelValues("timeout").Inc()
	klog.V(3).InfoS("Closing a connection that has not begun a request in time", "address", c.key, "timeout", t.opts.Timeout)
	_ = c.Close()
}

// Filter marks each request's connection begun. It must be the
// outermost filter, so that every request counts, whatever it carries
// and whatever a limit further in does with it.
func (t *Tracker) Filter(next http.Handler) http.Handler {
	if !t.enabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.begin(r.RemoteAddr)
		next.ServeHTTP(w, r)
	})
}

// begin marks the connection of remote begun; most requests come on one
// already begun, and find nothing under the read lock.
func (t *Tracker) begin(remote string) {
	t.mu.RLock()
	c, ok := t.byAddr[remote]
	t.mu.RUnlock()
	if ok {
		t.forget(c)
	}
}

// conn is one client connection, tracked until its first request.
type conn struct {
	net.Conn
	t      *Tracker
	key    string
	prefix string        // login.PrefixOf its address
	elem   *list.Element // t.mu; nil once begun, closed or forgotten
	timer  clock.Timer   // t.mu
	once   sync.Once
}

// Close forgets the connection before its address can be reused.
func (c *conn) Close() error {
	c.once.Do(func() { c.t.forget(c) })
	return c.Conn.Close()
}

// len is how many connections have not begun a request.
func (t *Tracker) len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.waiting.Len()
}
