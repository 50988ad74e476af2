package revdial

import "sync/atomic"

// Stats is a snapshot of a Server's counters, for a metrics adapter to read.
// Everything but LiveTunnels only ever grows.
type Stats struct {
	LiveTunnels    int64 // control channels currently adopted
	Tunnels        int64 // control channels ever adopted
	Dials          int64 // Dial calls
	DialErrors     int64 // Dial calls that returned an error
	PickupFailures int64 // pickup-failed messages that failed a dial
	PickupRefused  int64 // pickups refused: unknown, used or withdrawn token
	WarmHits       int64 // Dials served from the warm pool
	WarmMisses     int64 // Dials that found the warm pool empty
	BytesRead      int64 // payload bytes read from pickups by the server
	BytesWritten   int64 // payload bytes written to pickups by the server
}

// counters are the live, atomically updated form of Stats.
type counters struct {
	liveTunnels, tunnels, dials, dialErrors atomic.Int64
	pickupFailures, pickupRefused           atomic.Int64
	warmHits, warmMisses                    atomic.Int64
	bytesRead, bytesWritten                 atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		LiveTunnels:    c.liveTunnels.Load(),
		Tunnels:        c.tunnels.Load(),
		Dials:          c.dials.Load(),
		DialErrors:     c.dialErrors.Load(),
		PickupFailures: c.pickupFailures.Load(),
		PickupRefused:  c.pickupRefused.Load(),
		WarmHits:       c.warmHits.Load(),
		WarmMisses:     c.warmMisses.Load(),
		BytesRead:      c.bytesRead.Load(),
		BytesWritten:   c.bytesWritten.Load(),
	}
}
