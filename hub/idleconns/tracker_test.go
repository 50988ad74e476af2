package idleconns

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// pair accepts one real loopback connection through l and returns both
// ends.
func pair(t *testing.T, raw, l net.Listener, from string) (client, server net.Conn) {
	t.Helper()
	d := net.Dialer{}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	client, err := d.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	server, err = l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Close() })
	return client, server
}

// closedByHub reports whether the hub closed client's connection: a read
// ends with EOF rather than the deadline.
func closedByHub(t *testing.T, client net.Conn) bool {
	t.Helper()
	_ = client.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	_, err := client.Read(make([]byte, 1))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return err != nil // io.EOF, or a reset
}

// Connections that begin no request are closed past the timeout or, the
// oldest first, past the bound; one that began a request, and the hub's
// own, are not. Real loopback connections, a fake clock.
func TestTracker(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    Options
		conns   int
		begun   []int    // connections that send a request
		own     []int    // the hub's own dials
		from    []string // each connection's address; "": 127.0.0.1
		step    time.Duration
		closed  []int // want closed by the hub
		waiting int   // want still tracked
	}{
		{name: "timeout closes the idle ones", opts: Options{Timeout: 10 * time.Second}, conns: 3, begun: []int{1}, step: 10 * time.Second,
			closed: []int{0, 2}},
		{name: "nothing before the timeout", opts: Options{Timeout: 10 * time.Second}, conns: 3, step: 9 * time.Second, waiting: 3},
		{name: "the hub's own are never closed", opts: Options{Timeout: 10 * time.Second}, conns: 2, own: []int{0}, step: time.Minute,
			closed: []int{1}},
		{name: "past the bound the oldest goes", opts: Options{Max: 2}, conns: 4, closed: []int{0, 1}, waiting: 2},
		{name: "begun ones hold no place", opts: Options{Max: 2}, conns: 4, begun: []int{0, 1}, waiting: 2},
		{name: "the bound skips the hub's own", opts: Options{Max: 2}, conns: 4, own: []int{0}, closed: []int{1}, waiting: 2},
		{name: "past the bound the oldest of the prefix holding the most goes", opts: Options{Max: 3}, conns: 5,
			from: []string{"127.0.7.1", "127.0.8.1", "127.0.8.2", "127.0.8.3", "127.0.8.4"}, closed: []int{1, 2}, waiting: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			clk := clocktesting.NewFakeClock(time.Unix(1e9, 0))
			own := map[string]bool{}
			tr := New(tc.opts, func(remote string) bool { return own[remote] }, clk)
			l := tr.Listener(raw)
			h := tr.Filter(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			clients := make([]net.Conn, tc.conns)
			for i := range tc.conns {
				var server net.Conn
				from := ""
				if i < len(tc.from) {
					from = tc.from[i]
				}
				clients[i], server = pair(t, raw, l, from)
				for _, k := range tc.own {
					if k == i {
						own[server.RemoteAddr().String()] = true
					}
				}
				for _, k := range tc.begun {
					if k == i {
						r := httptest.NewRequest(http.MethodGet, "/", nil)
						r.RemoteAddr = server.RemoteAddr().String()
						h.ServeHTTP(httptest.NewRecorder(), r)
					}
				}
			}
			clk.Step(tc.step)
			if tc.step > 0 {
				// AfterFunc runs its function in a goroutine of its own.
				deadline := time.Now().Add(5 * time.Second)
				for tr.len() != tc.waiting && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
			}
			want := map[int]bool{}
			for _, k := range tc.closed {
				want[k] = true
			}
			for i, c := range clients {
				if got := closedByHub(t, c); got != want[i] {
					t.Errorf("connection %d closed by the hub: %v, want %v", i, got, want[i])
				}
			}
			if got := tr.len(); got != tc.waiting {
				t.Errorf("connections not begun: %d, want %d", got, tc.waiting)
			}
		})
	}
}

// A disabled tracker wraps nothing.
func TestTrackerDisabled(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if l := New(Options{}, nil, clocktesting.NewFakeClock(time.Now())).Listener(raw); l != raw {
		t.Errorf("a tracker without bounds wrapped the listener")
	}
}
