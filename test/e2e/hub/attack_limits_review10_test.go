package hub

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Issue 24, tenth outside review (docs/reviews/issue-24-review-10.md):
// 8,000 connections a second from one address, each sending a ClientHello
// (or nothing) and no request. Past --max-connections-without-request the
// hub closed the oldest such connection hub-wide, so the flood turned the
// places over faster than anyone's handshake and request, and every
// newcomer's connection, from any address, was closed before its first
// request. Now the oldest of the prefix holding the most is closed: the
// flood turns over its own places. The row counts answers, never times.
func TestAttackLimitsReview10Churn(t *testing.T) {
	t.Parallel()
	// Eight places: a flood that keeps them full is cheap to run here.
	h := startConnsHub(t, hubOptions{}, "--max-connections-without-request", "8")
	for _, tc := range []struct {
		row   string
		flood func(i int) net.IP
	}{
		{"r10:h4/a churn of connections without requests from one prefix closes its own, not a newcomer's from another prefix",
			func(i int) net.IP { return net.IPv4(127, 0, 9, byte(1+i%4)) }},
		// The hub's own address (a process on its host): its handshakes
		// take turns, but its places are its prefix's like any other's.
		{"r10:h4b/a churn from the hub's own address closes its own, not a newcomer's from another prefix",
			func(int) net.IP { return net.IPv4(127, 0, 0, 1) }},
	} {
		churnRow(t, h, tc.row, tc.flood)
	}
	hubHealthy(t, h)
}

func churnRow(t *testing.T, h *hubProc, row string, from func(i int) net.IP) {
	t.Run(row, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		addr := strings.TrimPrefix(h.URL, "https://")
		var opened, closedByHub atomic.Int64
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: from(i)}, Timeout: 5 * time.Second}
				for ctx.Err() == nil {
					c, err := d.DialContext(ctx, "tcp", addr)
					if err != nil {
						continue
					}
					opened.Add(1)
					// Nothing sent: wait for the hub to close it.
					stop := context.AfterFunc(ctx, func() { _ = c.Close() })
					if _, err := c.Read(make([]byte, 1)); err != nil && ctx.Err() == nil {
						closedByHub.Add(1)
					}
					stop()
					_ = c.Close()
				}
			}()
		}
		// The newcomer: a new connection (and TLS handshake) per request
		// from another prefix, as kubectl runs, while the flood goes on.
		newcomer := connsClient(h, "127.0.5.1", false, true)
		var got codes
		for range 30 {
			victorGetAPI(t.Context(), t, h, newcomer, &got)
		}
		floodClosed := closedByHub.Load()
		cancel()
		wg.Wait()
		id, _, _ := strings.Cut(row, "/")
		t.Logf("%s: the flood opened %d connections, %d closed by the hub while it ran; the newcomer: %s", id, opened.Load(), floodClosed, &got)
		if floodClosed < 30 {
			t.Fatalf("%s: only %d of the flood's connections closed by the hub: the bound was not reached", id, floodClosed)
		}
		if got.get("OK") != 30 {
			t.Errorf("%s: the newcomer from another prefix during the flood: %s, want OK:30", id, &got)
		}
	})
}
