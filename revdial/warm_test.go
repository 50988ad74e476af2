package revdial

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// warmIdle reports how many warm pickups are pooled.
func (d *Dialer) warmIdle() int {
	d.warm.mu.Lock()
	defer d.warm.mu.Unlock()
	return len(d.warm.idle)
}

// TestWarmPickups: with a pool, dials are served from it, the pool refills,
// and the agent's application never sees a pickup that was not dialed.
func TestWarmPickups(t *testing.T) {
	noLeaks(t)
	const size = 3
	opts := fastOptions()
	opts.WarmPickups = size
	h := newHub(t, opts)
	ln, d := h.agent("warm", opts, nil)
	var accepted atomic.Int64
	serve(t, ln, func(c net.Conn) {
		accepted.Add(1)
		echo(c)
	})
	eventually(t, "the pool fills", func() bool { return d.warmIdle() == size })
	if n := accepted.Load(); n != 0 {
		t.Fatalf("agent accepted %d idle warm pickups", n)
	}
	for i := 0; i < 2*size; i++ {
		c, err := d.Dial(context.Background())
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		msg := fmt.Sprintf("warm %d", i)
		if got, err := roundTrip(c, msg); err != nil || got != msg {
			t.Fatalf("dial %d: %q, %v", i, got, err)
		}
		c.Close()
	}
	st := h.srv.Stats()
	if st.WarmHits < size || st.WarmHits+st.WarmMisses != 2*size {
		t.Fatalf("hits %d misses %d, want >= %d hits of %d dials", st.WarmHits, st.WarmMisses, size, 2*size)
	}
	eventually(t, "the pool refills", func() bool { return d.warmIdle() == size })
	if n := accepted.Load(); n != 2*size {
		t.Fatalf("agent accepted %d connections for %d dials", n, 2*size)
	}
}

func TestWarmPoolDrainsWithTunnel(t *testing.T) {
	noLeaks(t)
	opts := fastOptions()
	opts.WarmPickups = 2
	opts.WarmMaxAge = 50 * time.Millisecond // exercise recycling too
	h := newHub(t, opts)
	_, d := h.agent("warm", opts, nil)
	eventually(t, "the pool fills", func() bool { return d.warmIdle() == 2 })
	time.Sleep(100 * time.Millisecond) // a recycle round
	eventually(t, "the pool refills after recycling", func() bool { return d.warmIdle() == 2 })
	d.Close()
	if n := d.warmIdle(); n != 0 {
		t.Fatalf("%d warm pickups left after Close", n)
	}
	if _, err := d.Dial(context.Background()); err == nil {
		t.Fatal("Dial on a closed dialer succeeded")
	}
}
