package tenantconns

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/endpoints/responsewriter"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

var closed = metrics.NewCounterVec(&metrics.CounterOpts{Name: "wharf_tenant_connections_closed_total",
	Help:           "Client connections closed because their tenant held more than --max-connections-per-tenant: the silent longest (idle), or the newest once its requests ended (newest).",
	StabilityLevel: metrics.ALPHA}, []string{"reason"})

func init() {
	legacyregistry.MustRegister(closed)
}

// Tracker holds the connections and the tenant each belongs to.
type Tracker struct {
	perTenant int
	clock     clock.PassiveClock
	exempt    func(remote string) bool

	mu       sync.RWMutex
	byAddr   map[string]*conn              // mu
	byTenant map[string]map[*conn]struct{} // mu
}

// New returns a tracker bounding each tenant to perTenant connections
// (0: no bound) on clock c. exempt (may be nil) names the connections, by
// remote address, never counted: the hub's own.
func New(perTenant int, exempt func(remote string) bool, c clock.PassiveClock) *Tracker {
	if perTenant <= 0 {
		return nil
	}
	return &Tracker{perTenant: perTenant, clock: c, exempt: exempt, byAddr: map[string]*conn{}, byTenant: map[string]map[*conn]struct{}{}}
}

// Listener wraps l so that its connections are tracked. A nil Tracker
// returns l.
func (t *Tracker) Listener(l net.Listener) net.Listener {
	if t == nil {
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
	if l.t.exempt != nil && l.t.exempt(key) {
		return c, nil
	}
	tc := &conn{Conn: c, t: l.t, key: key, last: l.t.clock.Now()}
	l.t.mu.Lock()
	l.t.byAddr[key] = tc
	l.t.mu.Unlock()
	return tc, nil
}

// conn is one client connection.
type conn struct {
	net.Conn
	t    *Tracker
	key  string
	once sync.Once

	// Guarded by t.mu.
	tenant    string
	inflight  int
	last      time.Time // when its last request ended, or it was accepted
	closeIdle bool      // closed once its requests have ended (closingWriter)
	gone      bool      // closed or forgotten
}

// Close forgets the connection before its address can be reused.
func (c *conn) Close() error {
	c.once.Do(func() {
		c.t.mu.Lock()
		defer c.t.mu.Unlock()
		c.t.forgetLocked(c)
	})
	return c.Conn.Close()
}

func (t *Tracker) forgetLocked(c *conn) {
	c.gone = true
	if t.byAddr[c.key] == c {
		delete(t.byAddr, c.key)
	}
	if m := t.byTenant[c.tenant]; m != nil {
		delete(m, c)
		if len(m) == 0 {
			delete(t.byTenant, c.tenant)
		}
	}
}

type connKey struct{}

// withConn returns ctx carrying the request's tracked connection.
func withConn(ctx context.Context, c *conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// connFrom returns the request's tracked connection, nil when it has none.
func connFrom(ctx context.Context) *conn {
	c, _ := ctx.Value(connKey{}).(*conn)
	return c
}

// Filter counts each request on its connection while it runs, and puts
// the connection in its context for Attribute. It must be outside every
// filter that may hold a request, so that every request counts.
func (t *Tracker) Filter(next http.Handler) http.Handler {
	if t == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.mu.Lock()
		c := t.byAddr[r.RemoteAddr]
		if c != nil {
			c.inflight++
		}
		t.mu.Unlock()
		if c == nil {
			next.ServeHTTP(w, r)
			return
		}
		defer t.ended(c)
		w = responsewriter.WrapForHTTP1Or2(&closingWriter{ResponseWriter: w, c: c})
		next.ServeHTTP(w, r.WithContext(withConn(r.Context(), c)))
	})
}

// ended counts a request of c done.
func (t *Tracker) ended(c *conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c.inflight--
	c.last = t.clock.Now()
}

// closingWriter answers "Connection: close" on a connection to be closed
// once its requests end: Go's HTTP/1.1 server then closes it after the
// answer, and its HTTP/2 server sends GOAWAY and closes it once its
// streams are done, so no answer in flight is cut.
type closingWriter struct {
	http.ResponseWriter
	c       *conn
	checked bool
}

func (w *closingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *closingWriter) check() {
	if w.checked {
		return
	}
	w.checked = true
	w.c.t.mu.RLock()
	closing := w.c.closeIdle
	w.c.t.mu.RUnlock()
	if closing {
		w.ResponseWriter.Header().Set("Connection", "close")
	}
}

func (w *closingWriter) WriteHeader(code int) {
	w.check()
	w.ResponseWriter.WriteHeader(code)
}

func (w *closingWriter) Write(b []byte) (int, error) {
	w.check()
	return w.ResponseWriter.Write(b)
}

// Unattributed reports whether ctx's request came on a tracked connection
// that is no tenant's yet.
func Unattributed(ctx context.Context) bool {
	c := connFrom(ctx)
	if c == nil {
		return false
	}
	c.t.mu.RLock()
	defer c.t.mu.RUnlock()
	return c.tenant == "" && !c.gone
}

// Attribute makes the connection of ctx's request tenant's, if it is no
// tenant's yet, and closes one of tenant's connections if that puts her
// over her bound.
func Attribute(ctx context.Context, tenant string) {
	c := connFrom(ctx)
	if c == nil {
		return
	}
	t := c.t
	t.mu.RLock()
	done := c.tenant != "" || c.gone
	t.mu.RUnlock()
	if done {
		return
	}
	t.mu.Lock()
	if c.tenant != "" || c.gone {
		t.mu.Unlock()
		return
	}
	c.tenant = tenant
	m := t.byTenant[tenant]
	if m == nil {
		m = map[*conn]struct{}{}
		t.byTenant[tenant] = m
	}
	m[c] = struct{}{}
	var victim *conn
	if len(m) > t.perTenant {
		for o := range m {
			if o != c && o.inflight == 0 && !o.closeIdle && (victim == nil || o.last.Before(victim.last)) {
				victim = o
			}
		}
		if victim == nil {
			// Closed once its requests end (closingWriter).
			c.closeIdle = true
			closed.WithLabelValues("newest").Inc()
			klog.V(3).InfoS("Closing the newest connection of a tenant over its bound once its requests end", "tenant", tenant, "max", t.perTenant)
		} else {
			t.forgetLocked(victim)
		}
	}
	t.mu.Unlock()
	if victim != nil {
		closed.WithLabelValues("idle").Inc()
		klog.V(3).InfoS("Closing the connection silent longest of a tenant over its bound", "tenant", tenant, "max", t.perTenant)
		_ = victim.Close()
	}
}
