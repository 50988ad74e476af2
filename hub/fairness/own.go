package fairness

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// The hub's own address (a peer whose address is the one it connected
// to: 127.0.0.1 beside a hub on loopback, the pod's address in its pod)
// is every process on the hub's host or in its pod: the hub's loopback
// client, its provider plugins calling back, kubectl or a TCP proxy
// there. It used to be outside the handshake metering, so a client there
// that the hub's refusals disconnect (state.closeUnless) reconnected for
// free: the fourth outside review's attempt 4, 600 workers over HTTP/2
// from 127.0.0.1, got 3,797 answers a second.
//
// Its handshakes then took tokens of a bucket of their own, waiting up to
// 5 s for one. But before a handshake nothing tells one local client from
// another, and a rate shared by all of them is a queue any of them can
// fill: the ninth outside review's combined attack from 127.0.0.1 (a TLS
// churn of 130 connections a second, watches and floods whose 429s closed
// their connections: 935 new connections a second) kept that queue 5 s
// long, and every other local client's new connection (a kubectl run)
// waited 4.8-5.0 s for its handshake.
//
// What a handshake costs the hub is CPU, and that is what is bounded now:
// at most DefaultOwnHandshakeCPUs handshakes from the own address compute
// at once (half the CPUs, at least one, as one tenant's busy turns: busy.go),
// the others waiting in order of arrival. A handshake holds its turn only
// while the hub computes on it: from a read that brought its records until
// the hub next reads or writes (its answer, or waiting for the client), so
// a slow or silent client holds none, and a newcomer waits only for the
// work actually ahead of it, not for a rate's backlog. One whose client
// has already gone (a ClientHello and a reset: the tenth review's flood)
// never waits, and is dropped if it goes while it waits (peerGone). Past
// ownHandshakeWait a waiting one is closed unread. The in-process loopback
// client's own connections (OwnDials) take no turn: the hub's own work
// never waits behind a local flood.

// ownHandshakeWait is the longest a handshake from the hub's own address
// waits for its turn: well inside client-go's 10 s TLS handshake timeout.
const ownHandshakeWait = 5 * time.Second

// DefaultOwnHandshakeCPUs is how many handshakes from the hub's own
// address compute at once: half the CPUs, at least one.
func DefaultOwnHandshakeCPUs() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// ownTurns is the one key of the own address's turnstile.
const ownTurns = "own"

// ownHandshakes bounds the own address's handshakes computing at once.
type ownHandshakes struct {
	turns *Turnstile
	clock clock.Clock
	wait  time.Duration
}

func newOwnHandshakes(cpus int, c clock.Clock) *ownHandshakes {
	return &ownHandshakes{turns: newTurnstile(max(1, cpus), max(1, cpus)), clock: c, wait: ownHandshakeWait}
}

// admit takes a turn, waiting for it up to o.wait; past that it holds
// none and refuses.
func (o *ownHandshakes) admit() bool {
	if o.turns.try(ownTurns) {
		return true
	}
	ownHandshakesWaited.Inc()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t := o.clock.NewTimer(o.wait)
	defer t.Stop()
	go func() {
		select {
		case <-t.C():
			cancel()
		case <-ctx.Done():
		}
	}()
	return o.turns.acquire(ctx, ownTurns)
}

func (o *ownHandshakes) done() { o.turns.release(ownTurns) }

// tlsRecords follows the TLS record boundaries of what a connection from
// the own address reads while it shakes hands, to tell when the handshake
// is over: at the first application-data record after the hub has
// answered (TLS 1.3 sends the client's Finished as one; TLS 1.2 sends it
// before the first request), or at once for a peer that does not speak
// TLS. A client cannot end it early to compute unmetered: records before
// the hub's answer do not end it, and the hub answers only after the
// ClientHello's work. maxHandshakeReads more reads after the answer end
// it in any case, so a client whose records are malformed cannot make
// every read of its connection take a turn.
type tlsRecords struct {
	skip  int     // bytes left of the current record's body
	hdr   [5]byte // the current header, hdrN of its bytes read
	hdrN  int
	after int // reads since the hub first answered
}

const (
	recordChangeCipherSpec = 0x14
	recordAlert            = 0x15
	recordHandshake        = 0x16
	recordApplicationData  = 0x17
	maxHandshakeReads      = 8
)

// feed takes the bytes of one read; answered says whether the hub has
// written to the connection. It reports whether the handshake is over.
func (r *tlsRecords) feed(b []byte, answered bool) bool {
	if answered {
		if r.after++; r.after > maxHandshakeReads {
			return true
		}
	}
	for len(b) > 0 {
		if r.skip > 0 {
			k := min(r.skip, len(b))
			r.skip -= k
			b = b[k:]
			continue
		}
		k := copy(r.hdr[r.hdrN:], b)
		r.hdrN += k
		b = b[k:]
		switch r.hdr[0] {
		case recordChangeCipherSpec, recordAlert, recordHandshake:
		case recordApplicationData:
			if answered {
				return true
			}
		default:
			return true // not TLS: no handshake to meter
		}
		if r.hdrN < len(r.hdr) {
			return false
		}
		r.hdrN = 0
		r.skip = int(r.hdr[3])<<8 | int(r.hdr[4])
	}
	return false
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
