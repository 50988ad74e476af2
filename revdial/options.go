package revdial

import "time"

// Defaults follow the spec (keep-alive and read deadline) or are chosen to
// fail a stuck dial well before a typical client gives up.
const (
	DefaultKeepAliveInterval = 18 * time.Second
	DefaultReadDeadline      = 60 * time.Second
	DefaultPickupWait        = 15 * time.Second
	DefaultHandshakeTimeout  = 10 * time.Second
	DefaultWriteTimeout      = 10 * time.Second
)

// Options tune both sides of a tunnel. The zero value means the defaults;
// tests shorten every interval.
type Options struct {
	// KeepAliveInterval is how often the server sends keep-alive.
	KeepAliveInterval time.Duration
	// ReadDeadline is how long either side waits for any control message
	// before it declares the tunnel dead.
	ReadDeadline time.Duration
	// PickupWait bounds how long Dial waits for the agent's pickup.
	PickupWait time.Duration
	// HandshakeTimeout bounds one websocket handshake: the pickup upgrade on
	// the server, the pickup and control dials on the agent.
	HandshakeTimeout time.Duration
	// WriteTimeout bounds one control-message write.
	WriteTimeout time.Duration
	// MaxConcurrentPickups bounds the pickup handshakes an agent runs at
	// once. A burst of dials then queues at the agent instead of starting
	// hundreds of TLS handshakes that all miss HandshakeTimeout (a
	// handshake that times out after the server upgraded it leaves the
	// dial with a dead connection). Zero means 64.
	MaxConcurrentPickups int
	// WarmPickups is how many spare pickups the server keeps open per
	// tunnel so that Dial can return one without a round trip. Zero
	// disables the pool. Enable it only for agents built on this package:
	// an agent that does not know the activation frame would pass it to
	// its application as data.
	WarmPickups int
	// WarmMaxAge recycles warm pickups that have sat idle this long, so
	// that intermediaries with idle timeouts never hand Dial a dead one.
	// Zero means 45 s.
	WarmMaxAge time.Duration
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.KeepAliveInterval, DefaultKeepAliveInterval)
	def(&o.ReadDeadline, DefaultReadDeadline)
	def(&o.PickupWait, DefaultPickupWait)
	def(&o.HandshakeTimeout, DefaultHandshakeTimeout)
	def(&o.WriteTimeout, DefaultWriteTimeout)
	def(&o.WarmMaxAge, 45*time.Second)
	if o.MaxConcurrentPickups <= 0 {
		o.MaxConcurrentPickups = 64
	}
	if o.WarmPickups < 0 {
		o.WarmPickups = 0
	}
	return o
}
