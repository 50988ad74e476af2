package hub

import (
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
// 542, 3,797 answers a second). Now the own address has a handshake
// bucket of its own: past its burst a handshake waits for its token, up to
// 5 s, and past that it is closed unread. The row counts handshakes
// served and closed, never times.
func TestAttackLimitsOwnAddress(t *testing.T) {
	t.Parallel()
	// 10 handshakes a second: the own address's bucket is 10 a second, a
	// burst of 10; with the 5 s wait at most 60 are admitted at once, so
	// 200 workers reconnecting are refused however slow the machine is.
	h := startConnsHub(t, hubOptions{}, "--max-tls-handshakes-per-second", "10")
	t.Run("r24d:4/new TLS connections from the hub's own address past its bound are closed unread; a kept-alive client is served", func(t *testing.T) {
		// victor's HTTP/2 connection from 127.0.0.1, made before the flood.
		victor := connsClient(h, "127.0.0.1", true, true)
		var victorConns atomic.Int64
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
			if !i.Reused {
				victorConns.Add(1)
			}
		}}
		victorGet := func(got *codes) {
			req, err := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), http.MethodGet, h.URL+"/api", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer victor-token")
			resp, err := victor.Do(req)
			if err != nil {
				got.add("ERR")
				return
			}
			_ = resp.Body.Close()
			got.add(http.StatusText(resp.StatusCode))
		}
		var before codes
		victorGet(&before)
		if before.get("OK") != 1 {
			t.Fatalf("victor before the flood: %s", &before)
		}

		tlsConf := connsClient(h, "127.0.0.1", true, true).Transport.(*http.Transport).TLSClientConfig.Clone()
		tlsConf.NextProtos = []string{"h2", "http/1.1"}
		addr := strings.TrimPrefix(h.URL, "https://")
		const workers, each = 200, 5
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
		var during codes
		for range 20 {
			victorGet(&during)
		}
		wg.Wait()
		t.Logf("r24d:4: %d handshakes from 127.0.0.1 served, %d closed unread; victor on his kept-alive connection: %s (%d new connections)",
			served.Load(), closed.Load(), &during, victorConns.Load())
		if closed.Load() == 0 {
			t.Errorf("r24d:4: %d new TLS connections from the hub's own address, none closed: its handshakes are not metered", served.Load())
		}
		if served.Load() == 0 {
			t.Errorf("r24d:4: no handshake from the hub's own address was served")
		}
		if during.get("OK") != 20 {
			t.Errorf("r24d:4: victor's kept-alive requests during the flood: %s, want 20 OK", &during)
		}
	})
	hubHealthy(t, h)
}
