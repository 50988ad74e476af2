package fairness

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/httpstream"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"
)

// Upgraded connections (101 Switching Protocols: websockets, exec,
// attach and port-forward, the edges' ssh pipe) are charged to their
// caller's traffic budget both ways, as their bytes move, and paced to
// its rate. Before, the budget stopped at the upgrade (a documented
// gap): the sixth review (#5) echoed 109 MB/s through 20 websockets on
// /services/providers/hello/echo against a 16 MB/s budget, and another
// tenant's CRUD fell from 230 to 38 operations a second while the hub's
// CPUs encrypted it.
//
// Every upgrade the hub carries for a caller is hijacked from a writer
// of this package (refusalWriter, under WithState or WithProviderLimit),
// so that is where it is metered, once, for every provider and for the
// API alike. What is not charged, and why:
//   - hub administrators and system:masters (the hub's own in-process
//     clients among them) are exempt, as for every other budget;
//   - public provider paths (an edge agent's control websocket and its
//     revdial pickups) carry no caller, and what they carry is the
//     consumers' own traffic (an exec, an ssh session), charged to the
//     consumer where it enters the hub: charging the pickup as well
//     would count it twice, and to a shared anonymous budget one
//     stranger's flood would starve every edge behind NAT. The anonymous
//     bounds (anonymous.go) take a token per pickup, and the listener
//     bounds the connections;
//   - a request another replica forwarded was charged there.
//
// A tenant in debt waits after the read or write that put it there,
// until the debt is paid, the connection is closed or the request ends.
// The wait holds no lock, and no seat but the one the upgraded request
// holds for its whole life anyway (its own tenant's share).
type upgradedConn struct {
	net.Conn
	// r reads through the buffer the server had already filled: bytes
	// the client sent right behind its request are not lost.
	r      *bufio.Reader
	t      *traffic
	tenant string
	ctx    context.Context
	done   chan struct{}
	once   sync.Once
}

func (c *upgradedConn) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.t.hold(c.ctx, c.done, c.tenant, int64(n), true)
	return n, err
}

func (c *upgradedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.t.hold(c.ctx, c.done, c.tenant, int64(n), false)
	return n, err
}

// Close ends any wait of the connection's.
func (c *upgradedConn) Close() error {
	c.once.Do(func() { close(c.done) })
	return c.Conn.Close()
}

// hold charges n bytes of an upgraded connection to tenant and, when
// that leaves the tenant in debt, waits until the debt is paid, done is
// closed or ctx ends. in tells the direction for the metrics (read from
// the client).
func (t *traffic) hold(ctx context.Context, done <-chan struct{}, tenant string, n int64, in bool) {
	if t == nil || n <= 0 {
		return
	}
	upgradedBytes.WithLabelValues(direction(in)).Add(float64(n))
	var debt float64
	t.do(tenant, func(b *bytesBucket, _ time.Time) {
		b.tokens = max(-debtBursts*t.burst, b.tokens-float64(n))
		debt = -b.tokens
	})
	if debt <= 0 {
		return
	}
	start := t.clock.Now()
	timer := t.clock.NewTimer(time.Duration(debt / t.rate * float64(time.Second)))
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-done:
	case <-timer.C():
	}
	upgradedWait.WithLabelValues(direction(in)).Add(t.clock.Since(start).Seconds())
}

func direction(in bool) string {
	if in {
		return "in"
	}
	return "out"
}

// Hijack hands the upgrade its connection, charged to the request's
// tenant when it has one (upgradedConn).
func (w *refusalWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, fmt.Errorf("hijacking an upgraded connection: %w", err)
	}
	// What moves on it from now on is charged, not taken in turns: a
	// turn held for its life would be one CPU the less for everybody.
	w.st.cpu.end()
	t, tenant := w.st.upgrade, w.st.tenant
	if t == nil || tenant == "" {
		return conn, brw, nil
	}
	if err := brw.Flush(); err != nil {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("hijacking an upgraded connection: %w", err)
	}
	klog.V(4).InfoS("Upgraded connection charged to its tenant's traffic budget", "tenant", tenant, "path", w.r.URL.Path)
	// The request's context, not one that ends with it: the handler
	// carrying the upgrade is still running.
	c := &upgradedConn{Conn: conn, r: brw.Reader, t: t, tenant: tenant, ctx: w.r.Context(), done: make(chan struct{})}
	return c, bufio.NewReadWriter(bufio.NewReader(c), bufio.NewWriter(c)), nil
}

// WithUpgrades names the tenant of upgrade requests on the API chain,
// which upstream's priority-and-fairness filter serves as long-running
// without asking the Controller (so nothing else names it), for
// WithState's writer to charge their connections. It must run inside
// authentication and impersonation; callers the Controller exempts are
// not charged.
func (c *Controller) WithUpgrades(handler http.Handler) http.Handler {
	if c.traffic == nil {
		return handler
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st, ok := r.Context().Value(stateKey{}).(*state)
		if ok && st.tenant == "" && httpstream.IsUpgradeRequest(r) {
			if u, known := apirequest.UserFrom(r.Context()); known {
				if tenant, exempt := c.keyer.Tenant(r.Context(), u); !exempt {
					st.tenant, st.upgrade = tenant, c.traffic
				}
			}
		}
		handler.ServeHTTP(w, r)
	})
}
