package revdial

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestClientReconnects: the reconnecting client comes back after the hub
// restarts on the same address, and dials work through the new tunnel.
func TestClientReconnects(t *testing.T) {
	noLeaks(t)
	opts := fastOptions()
	srvTLS, cliTLS := testTLS(t)
	h1 := newHubOn(t, opts, nil, srvTLS, cliTLS)
	addr := h1.hs.Listener.Addr().String()

	states := make(chan bool, 64)
	// The backoff draws at its ceiling and records every ceiling it was
	// asked for, so the test can check the schedule the client followed.
	var mu sync.Mutex
	var ceilings []time.Duration
	backoff := Backoff{Base: 10 * time.Millisecond, Max: 50 * time.Millisecond}
	backoff.Rand = func(n int64) int64 {
		mu.Lock()
		defer mu.Unlock()
		ceilings = append(ceilings, time.Duration(n-1))
		return n - 1
	}
	var hdrCalls atomic.Int64
	cl, err := NewClient(ClientConfig{
		URL: h1.controlURL("roamer"),
		Header: func(ctx context.Context) (http.Header, error) {
			n := hdrCalls.Add(1)
			return http.Header{"Authorization": {fmt.Sprintf("Bearer rotating-%d", n)}}, nil
		},
		TLSConfig: withH2(h1.cliTLS),
		Options:   opts,
		Backoff:   backoff,
		OnState: func(up bool, _ error) {
			select {
			case states <- up:
			default:
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	runDone := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { runDone <- cl.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-runDone })
	serve(t, cl, echo)

	dialOnce := func(h *hub, msg string) {
		t.Helper()
		d := h.waitDialer()
		c, err := d.Dial(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if got, err := roundTrip(c, msg); err != nil || got != msg {
			t.Fatalf("%q: got %q, %v", msg, got, err)
		}
	}
	dialOnce(h1, "first life")

	// Restart the hub on the same port. The client must notice, back off,
	// and reconnect on its own.
	h1.close()
	time.Sleep(150 * time.Millisecond) // long enough for several refused attempts
	ln, err := listenRetry(addr)
	if err != nil {
		t.Fatal(err)
	}
	h2 := newHubOn(t, opts, ln, srvTLS, cliTLS)
	dialOnce(h2, "second life")

	// Exponential from Base, capped at Max, one step per failed attempt.
	mu.Lock()
	got := append([]time.Duration(nil), ceilings...)
	mu.Unlock()
	if len(got) < 3 {
		t.Fatalf("only %d reconnect attempts while the hub was down", len(got))
	}
	for i, c := range got {
		if want := backoff.Ceiling(i); c != want {
			t.Fatalf("attempt %d waited up to %v, want %v (schedule %v)", i, c, want, got)
		}
	}

	var ups, downs int
	for len(states) > 0 {
		if <-states {
			ups++
		} else {
			downs++
		}
	}
	// Control dials and pickups each asked for fresh headers.
	if n := hdrCalls.Load(); n < 4 {
		t.Errorf("Header called %d times, want one per handshake (>= 4)", n)
	}
	if ups < 2 || downs < 1 {
		t.Fatalf("state changes: %d up, %d down", ups, downs)
	}
}

// listenRetry re-binds a port that a server has just released.
func listenRetry(addr string) (net.Listener, error) {
	var err error
	for i := 0; i < 100; i++ {
		var ln net.Listener
		if ln, err = net.Listen("tcp", addr); err == nil {
			return ln, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, err
}

// withH2 offers HTTP/2 as a config shared with an http.Transport would; the
// client must still negotiate HTTP/1.1 for its websockets.
func withH2(c *tls.Config) *tls.Config {
	c = c.Clone()
	c.NextProtos = []string{"h2", "http/1.1"}
	return c
}
