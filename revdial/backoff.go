package revdial

import (
	"math/rand/v2"
	"time"
)

// Backoff is full-jitter exponential backoff: attempt n waits a uniformly
// random time in [0, min(Max, Base·2ⁿ)]. Full jitter spreads a fleet of
// agents that lost the hub at the same instant, so they do not reconnect in
// lockstep. The zero value means 1 s → 30 s, reset after 30 s connected.
type Backoff struct {
	Base        time.Duration
	Max         time.Duration
	StableAfter time.Duration // a connection this old resets the attempt count
	// Rand returns a value in [0, n); nil means math/rand/v2. Tests inject
	// it to check the bounds.
	Rand func(n int64) int64
}

func (b Backoff) withDefaults() Backoff {
	if b.Base <= 0 {
		b.Base = time.Second
	}
	if b.Max <= 0 {
		b.Max = 30 * time.Second
	}
	if b.Max < b.Base {
		b.Max = b.Base
	}
	if b.StableAfter <= 0 {
		b.StableAfter = 30 * time.Second
	}
	if b.Rand == nil {
		b.Rand = rand.Int64N
	}
	return b
}

// Ceiling is the upper bound of the delay before attempt n (0-based).
func (b Backoff) Ceiling(attempt int) time.Duration {
	b = b.withDefaults()
	if attempt < 0 {
		attempt = 0
	}
	if attempt >= 62 {
		return b.Max
	}
	c := b.Base << attempt
	if c <= 0 || c > b.Max || c>>attempt != b.Base {
		return b.Max
	}
	return c
}

// Delay draws the wait before attempt n.
func (b Backoff) Delay(attempt int) time.Duration {
	b = b.withDefaults()
	return time.Duration(b.Rand(int64(b.Ceiling(attempt)) + 1))
}
