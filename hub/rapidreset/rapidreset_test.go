package rapidreset

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// pipeListener hands out one end of a pipe per Accept, with a remote
// address of its own.
type pipeListener struct {
	conns chan net.Conn
}

func (l *pipeListener) Accept() (net.Conn, error) { return <-l.conns, nil }
func (l *pipeListener) Close() error              { return nil }
func (l *pipeListener) Addr() net.Addr            { return &net.TCPAddr{} }

type addrConn struct {
	net.Conn
	remote string
}

func (c addrConn) RemoteAddr() net.Addr {
	a, _ := net.ResolveTCPAddr("tcp", c.remote)
	return a
}

// accept registers a connection from remote with b and returns it.
func accept(t *testing.T, b *Budgets, remote string) *conn {
	t.Helper()
	server, client := net.Pipe()
	t.Cleanup(func() { _ = client.Close() })
	pl := &pipeListener{conns: make(chan net.Conn, 1)}
	pl.conns <- addrConn{Conn: server, remote: remote}
	c, err := b.Listener(pl).Accept()
	if err != nil {
		t.Fatal(err)
	}
	return c.(*conn)
}

// cancelled is an HTTP/2 request from remote whose client reset it.
func cancelled(remote string) *http.Request {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := httptest.NewRequest(http.MethodGet, "/version", nil).WithContext(ctx)
	r.ProtoMajor, r.RemoteAddr = 2, remote
	return r
}

func TestBudget(t *testing.T) {
	const remote = "192.0.2.7:40000"
	for _, tc := range []struct {
		name       string
		resets     int
		step       time.Duration
		then       int
		own        bool
		http1      bool
		wantClosed bool
	}{
		{name: "within the burst", resets: 3},
		{name: "past the burst: closed", resets: 4, wantClosed: true},
		{name: "refilled at the rate", resets: 3, step: time.Second, then: 2},
		{name: "past the refill: closed", resets: 3, step: time.Second, then: 3, wantClosed: true},
		{name: "the hub's own connection is never closed", resets: 50, own: true},
		{name: "HTTP/1.1 is not metered", resets: 50, http1: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(time.Unix(1, 0))
			b := New(Options{Burst: 3, PerSecond: 2, Unanswered: 4}, func(r string) bool { return tc.own && r == remote }, clk)
			c := accept(t, b, remote)
			ran := 0
			h := b.Filter(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran++ }))
			send := func(n int) {
				for range n {
					r := cancelled(remote)
					if tc.http1 {
						r.ProtoMajor = 1
					}
					h.ServeHTTP(httptest.NewRecorder(), r)
				}
			}
			send(tc.resets)
			clk.SetTime(clk.Now().Add(tc.step))
			send(tc.then)
			if got := c.closing.Load(); got != tc.wantClosed {
				t.Errorf("closed = %v, want %v", got, tc.wantClosed)
			}
			// The hub's own connections and HTTP/1.1 pass untouched.
			if want := map[bool]int{true: tc.resets + tc.then, false: 0}[tc.own || tc.http1]; ran != want {
				t.Errorf("%d cancelled streams reached the chain, want %d", ran, want)
			}
			if tc.wantClosed {
				if _, ok := b.conns.Load(remote); ok {
					t.Errorf("a closed connection stays registered")
				}
			}
		})
	}
}

// A stream answered before its client cancelled it is an ordinary
// request: not charged. One whose answer began only after the cancel
// (a handler noticing it) is.
func TestAnsweredInTime(t *testing.T) {
	const remote = "192.0.2.8:40000"
	clk := clocktesting.NewFakePassiveClock(time.Unix(1, 0))
	b := New(Options{Burst: 1, PerSecond: 0, Unanswered: 4}, nil, clk)
	c := accept(t, b, remote)
	for _, tc := range []struct {
		name        string
		answerFirst bool
		wantClosed  bool
	}{
		{name: "answered, then cancelled", answerFirst: true},
		{name: "answered again, then cancelled", answerFirst: true},
		{name: "cancelled, then answered (the burst)", answerFirst: false},
		{name: "cancelled, then answered (past it)", answerFirst: false, wantClosed: true},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		r := httptest.NewRequest(http.MethodGet, "/version", nil).WithContext(ctx)
		r.ProtoMajor, r.RemoteAddr = 2, remote
		b.Filter(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if tc.answerFirst {
				w.WriteHeader(http.StatusOK)
				cancel()
				return
			}
			cancel()
			w.WriteHeader(http.StatusGatewayTimeout)
		})).ServeHTTP(httptest.NewRecorder(), r)
		if got := c.closing.Load(); got != tc.wantClosed {
			t.Fatalf("%s: closed = %v, want %v", tc.name, got, tc.wantClosed)
		}
	}
}

// Past Unanswered streams in the chain a stream waits, and a reset ends
// its wait: charged, never run.
func TestUnansweredWait(t *testing.T) {
	const remote = "192.0.2.9:40000"
	clk := clocktesting.NewFakePassiveClock(time.Unix(1, 0))
	b := New(Options{Burst: 10, PerSecond: 0, Unanswered: 1}, nil, clk)
	accept(t, b, remote)
	release := make(chan struct{})
	started := make(chan struct{})
	h := b.Filter(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(started)
			<-release
		}
		w.WriteHeader(http.StatusOK)
	}))
	slow := httptest.NewRequest(http.MethodGet, "/slow", nil)
	slow.ProtoMajor, slow.RemoteAddr = 2, remote
	done := make(chan struct{})
	go func() { h.ServeHTTP(httptest.NewRecorder(), slow); close(done) }()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	waiting := httptest.NewRequest(http.MethodGet, "/next", nil).WithContext(ctx)
	waiting.ProtoMajor, waiting.RemoteAddr = 2, remote
	rec := httptest.NewRecorder()
	waited := make(chan struct{})
	go func() { h.ServeHTTP(rec, waiting); close(waited) }()
	cancel()
	<-waited
	if rec.Code != http.StatusOK || rec.Body.Len() != 0 || rec.Flushed {
		t.Errorf("the reset stream was served: %d", rec.Code)
	}
	if got := b.connOf(remote).bucket.TokensAt(clk.Now()); got != 9 {
		t.Errorf("tokens left %v, want 9: the reset in the wait was not charged", got)
	}
	close(release)
	<-done
}

func TestSkipCancelled(t *testing.T) {
	for _, tc := range []struct {
		name     string
		proto    int
		cancel   bool
		deadline bool
		wantRun  bool
	}{
		{name: "an HTTP/2 stream reset", proto: 2, cancel: true},
		{name: "an HTTP/2 stream", proto: 2, wantRun: true},
		{name: "an HTTP/2 stream past its deadline", proto: 2, deadline: true, wantRun: true},
		{name: "HTTP/1.1 (the in-process client) cancelled", proto: 1, cancel: true, wantRun: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.deadline {
				ctx, cancel = context.WithDeadline(ctx, time.Unix(1, 0))
				defer cancel()
			}
			if tc.cancel {
				cancel()
			}
			r := httptest.NewRequest(http.MethodGet, "/version", nil).WithContext(ctx)
			r.ProtoMajor = tc.proto
			ran := false
			SkipCancelled(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true })).ServeHTTP(httptest.NewRecorder(), r)
			if ran != tc.wantRun {
				t.Errorf("ran = %v, want %v", ran, tc.wantRun)
			}
		})
	}
}
