package fairness

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/utils/clock"
)

// The hub's own address (a peer whose address is the one it connected
// to: 127.0.0.1 beside a hub on loopback, the pod's address in its pod)
// is every process on the hub's host or in its pod: the hub's loopback
// client, its provider plugins calling back, kubectl or a TCP proxy
// there. It used to be outside the handshake metering, so a client there
// that the hub's refusals disconnect (state.closeUnless) reconnected for
// free: the fourth outside review's attempt 4, 600 workers over HTTP/2
// from 127.0.0.1, got 3,797 answers a second. Its handshakes now take
// tokens of a bucket of their own, the hub-wide rate and burst: an
// outsider cannot drain it, and a local flood cannot drain the hub-wide
// one. Past the burst a handshake waits for its token, up to
// ownHandshakeWait, instead of being closed: the local clients (kubectl
// runs, an agent, a plugin) are the hub's operators and tests and are
// paced, not cut; only a flood that keeps more waiting than that is
// closed unread. The in-process loopback client's own connections
// (OwnDials) take no token: the hub's own work never waits behind a
// local flood.

// ownHandshakeWait is the longest a handshake from the hub's own address
// waits for its token: well inside client-go's 10 s TLS handshake
// timeout, so a paced kubectl is served, not timed out.
const ownHandshakeWait = 5 * time.Second

// ownHandshakes is the own address's bucket.
type ownHandshakes struct {
	lim   *rate.Limiter
	clock clock.Clock
	wait  time.Duration
}

func newOwnHandshakes(perSecond float64, c clock.Clock) *ownHandshakes {
	return &ownHandshakes{lim: rate.NewLimiter(rate.Limit(perSecond), max(int(perSecond), 1)), clock: c, wait: ownHandshakeWait}
}

// admit takes a token, waiting for it up to o.wait; past that it takes
// none and refuses.
func (o *ownHandshakes) admit() bool {
	now := o.clock.Now()
	r := o.lim.ReserveN(now, 1)
	if !r.OK() {
		return false
	}
	d := r.DelayFrom(now)
	if d > o.wait {
		r.CancelAt(now)
		return false
	}
	if d > 0 {
		<-o.clock.After(d)
	}
	return true
}

// OwnDials dials the hub's own listener for its in-process clients (the
// loopback client config's Dial) and remembers each connection's local
// address, which the listener sees as its peer: those connections are
// never metered. Nobody else can take a local port the hub holds, so
// this cannot be forged the way a client name or SNI could.
type OwnDials struct {
	dialer net.Dialer
	mu     sync.Mutex
	local  map[string]bool // mu
}

// NewOwnDials returns an empty registry.
func NewOwnDials() *OwnDials {
	return &OwnDials{dialer: net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}, local: map[string]bool{}}
}

// DialContext dials addr and records the connection until it is closed.
func (d *OwnDials) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := d.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("hub loopback dial: %w", err)
	}
	key := c.LocalAddr().String()
	d.mu.Lock()
	d.local[key] = true
	d.mu.Unlock()
	return &ownConn{Conn: c, d: d, key: key}, nil
}

// has reports whether remote (ip:port, as the listener sees its peer) is
// one of the hub's own dials. A nil registry has none.
func (d *OwnDials) has(remote string) bool {
	if d == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.local[remote]
}

// Has is has for other packages (hub/rapidreset never closes the hub's
// own connections).
func (d *OwnDials) Has(remote string) bool { return d.has(remote) }

type ownConn struct {
	net.Conn
	d    *OwnDials
	key  string
	once sync.Once
}

// Close forgets the address before the port can be reused.
func (c *ownConn) Close() error {
	c.once.Do(func() {
		c.d.mu.Lock()
		delete(c.d.local, c.key)
		c.d.mu.Unlock()
	})
	return c.Conn.Close()
}
