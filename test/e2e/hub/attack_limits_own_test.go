package hub

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Issue 24, fourth outside review, attempt 4: mallory's flood of 429s,
// over HTTP/2 from 127.0.0.1, the address the hub listens on. Since a
// refusal not held closes its connection, each further one costs the
// client a new connection, whose TLS handshake is metered hub-wide and
// per prefix; but the hub's own address was outside that metering, so
// from 127.0.0.1 the flood reconnected for free (victor 6.7 ops/s against
// 542, 3,797 answers a second). The own address then got a handshake
// bucket of its own, waiting up to 5 s for a token; and the ninth outside
// review found that queue: all attacks at once from 127.0.0.1 (935 new
// connections a second) kept it 5 s long, so every other local client's
// new connection waited 4.8-5.0 s for its handshake, or was closed. Now
// the own address's handshakes take turns to compute (half the CPUs, at
// least one), in order of arrival: the flood is served in turn, and a
// newcomer waits only for the work ahead of it. The row counts
// handshakes and answers, never times.
func TestAttackLimitsOwnAddress(t *testing.T) {
	t.Parallel()
	// 10 handshakes a second: under the old bucket (10 a second, burst
	// 10, 5 s wait) 500 handshakes from 100 workers at once had hundreds
	// closed unread, however fast the machine; taking turns to compute, a
	// hundred waiting ones are served well inside the 5 s.
	h := startConnsHub(t, hubOptions{}, "--max-tls-handshakes-per-second", "10")
	t.Run("r24d:4,r9:w2/a TLS churn from the hub's own address takes turns: every handshake is served, a new local client is never refused, a kept-alive one is served", func(t *testing.T) {
		// victor's HTTP/2 connection from 127.0.0.1, made before the flood.
		victor := connsClient(h, "127.0.0.1", true, true)
		var victorConns atomic.Int64
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
			if !i.Reused {
				victorConns.Add(1)
			}
		}}
		get := func(c *http.Client, tr *httptrace.ClientTrace, got *codes) {
			ctx := t.Context()
			if tr != nil {
				ctx = httptrace.WithClientTrace(ctx, tr)
			}
			victorGetAPI(ctx, t, h, c, got)
		}
		var before codes
		get(victor, trace, &before)
		if before.get("OK") != 1 {
			t.Fatalf("victor before the flood: %s", &before)
		}

		tlsConf := connsClient(h, "127.0.0.1", true, true).Transport.(*http.Transport).TLSClientConfig.Clone()
		tlsConf.NextProtos = []string{"h2", "http/1.1"}
		addr := strings.TrimPrefix(h.URL, "https://")
		const workers, each = 100, 5
		var served, closed atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}, Timeout: 20 * time.Second}
				for range each {
					c, err := tls.DialWithDialer(d, "tcp", addr, tlsConf)
					if err != nil {
						closed.Add(1)
						continue
					}
					served.Add(1)
					_ = c.Close()
				}
			}()
		}
		flooding := make(chan struct{})
		go func() { wg.Wait(); close(flooding) }()
		// Meanwhile victor's kept-alive connection, and a newcomer (a
		// kubectl run: a new connection per request), one after another
		// until the flood ends.
		var kept, fresh codes
		newcomer := connsClient(h, "127.0.0.1", false, true)
		for done := false; !done; {
			get(victor, trace, &kept)
			get(newcomer, nil, &fresh)
			select {
			case <-flooding:
				done = true
			default:
			}
		}
		t.Logf("r24d:4: %d handshakes from 127.0.0.1 served, %d closed; %v waited for a turn; victor kept alive: %s (%d new connections); a newcomer: %s",
			served.Load(), closed.Load(), hubCounter(t, h, "wharf_tls_own_handshakes_waited_total"), &kept, victorConns.Load(), &fresh)
		if served.Load() != workers*each {
			t.Errorf("r24d:4: %d of %d handshakes from the hub's own address served, %d closed: a local flood must be served in turn", served.Load(), workers*each, closed.Load())
		}
		if fresh.get("OK") == 0 || fresh.get("OK") != fresh.total() {
			t.Errorf("r9:w2: a new local client during the flood: %s, want only OK", &fresh)
		}
		if kept.get("OK") != kept.total() {
			t.Errorf("r24d:4: victor's kept-alive requests during the flood: %s, want only OK", &kept)
		}
	})
	hubHealthy(t, h)
}

// victorGetAPI GETs /api as victor with c and tallies the answer (ERR:
// no answer).
func victorGetAPI(ctx context.Context, t *testing.T, h *hubProc, c *http.Client, got *codes) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.URL+"/api", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer victor-token")
	resp, err := c.Do(req)
	if err != nil {
		got.add("ERR")
		return
	}
	_ = resp.Body.Close()
	got.add(http.StatusText(resp.StatusCode))
}
