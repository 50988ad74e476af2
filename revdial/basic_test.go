package revdial

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

func TestDialEcho(t *testing.T) {
	noLeaks(t)
	h := newHub(t, fastOptions())
	ln, d := h.agent("a1", fastOptions(), nil)
	serve(t, ln, echo)

	for i, msg := range []string{"hello", "second", "third"} {
		c, err := d.Dial(context.Background())
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		got, err := roundTrip(c, msg)
		if err != nil || got != msg {
			t.Fatalf("dial %d: got %q, %v; want %q", i, got, err, msg)
		}
		if c.LocalAddr() == nil || c.RemoteAddr() == nil {
			t.Fatal("nil address")
		}
		c.Close()
		c.Close() // idempotent
	}
	st := h.srv.Stats()
	if st.Dials != 3 || st.DialErrors != 0 || st.LiveTunnels != 1 || st.BytesWritten == 0 || st.BytesRead == 0 {
		t.Fatalf("stats = %+v", st)
	}
	if got, ok := h.srv.Dialer("a1"); !ok || got != d {
		t.Fatal("dialer not registered under its id")
	}
}

// TestCloseSeenByPeer closes each end in turn and expects the other end's
// Read to see io.EOF.
func TestCloseSeenByPeer(t *testing.T) {
	tests := []struct {
		name        string
		closeHubEnd bool
	}{
		{"hub closes", true},
		{"agent closes", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			noLeaks(t)
			h := newHub(t, fastOptions())
			ln, d := h.agent("a1", fastOptions(), nil)
			hubEnd, err := d.Dial(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			agentEnd, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			closer, reader := agentEnd, hubEnd
			if tc.closeHubEnd {
				closer, reader = hubEnd, agentEnd
			}
			defer reader.Close()
			if err := closer.Close(); err != nil {
				t.Fatal(err)
			}
			if n, err := reader.Read(make([]byte, 8)); err != io.EOF {
				t.Fatalf("peer read = %d, %v; want io.EOF", n, err)
			}
			if _, err := closer.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
				t.Fatalf("write after close = %v, want net.ErrClosed", err)
			}
		})
	}
}

func TestHTTPOverTunnel(t *testing.T) {
	noLeaks(t)
	h := newHub(t, fastOptions())
	ln, d := h.agent("a1", fastOptions(), nil)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "agent says "+r.URL.Path)
	})}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); <-done })

	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return d.Dial(ctx) }}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	// Several requests on one kept-alive connection: net/http's server
	// aborts its background read with a past deadline between requests,
	// which must not break the conn.
	for i := 0; i < 5; i++ {
		resp, err := cl.Get("http://agent/x")
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "agent says /x" {
			t.Fatalf("request %d: body %q", i, b)
		}
	}
	if n := h.srv.Stats().Dials; n != 1 {
		t.Errorf("dials = %d, want 1 (connection reuse)", n)
	}
}

func TestReadDeadline(t *testing.T) {
	noLeaks(t)
	h := newHub(t, fastOptions())
	ln, d := h.agent("a1", fastOptions(), nil)
	serve(t, ln, echo)
	c, err := d.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	var ne net.Error
	if _, err := c.Read(make([]byte, 1)); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read past deadline: %v, want a timeout", err)
	}
	// The conn must still work once the deadline is lifted.
	c.SetDeadline(time.Time{})
	if got, err := roundTrip(c, "after"); err != nil || got != "after" {
		t.Fatalf("after deadline: %q, %v", got, err)
	}
	c.SetReadDeadline(time.Now().Add(-time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read with past deadline: %v, want a timeout", err)
	}
}
