package fairness

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/endpoints/request"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wharfhub/wharf/hub/apis/scheme"
)

// ownEnv is an anonymous bound whose own address is 10.0.0.1 and whose
// own dial is 10.0.0.1:7777: per prefix, and so for the own address, 2/s
// (burst 4) and 2 in flight. /hold is held until release.
type ownEnv struct {
	clk     *clocktesting.FakeClock
	h       http.Handler
	release chan struct{}
	entered chan struct{}
}

func newOwnEnv() *ownEnv {
	e := &ownEnv{clk: clocktesting.NewFakeClock(time.Unix(1e9, 0)), release: make(chan struct{}), entered: make(chan struct{}, 16)}
	a := NewAnonymous(10, 8, nil, "wharf_session", e.clk).WithOwnDials(func(remote string) bool { return remote == "10.0.0.1:7777" })
	e.h = a.WithAnonymousLimit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			e.entered <- struct{}{}
			<-e.release
		}
		w.WriteHeader(http.StatusOK)
	}), scheme.NewCodecs(scheme.New()))
	return e
}

func (e *ownEnv) send(remote, path string) int {
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.RemoteAddr = remote
	ctx := context.WithValue(r.Context(), http.LocalAddrContextKey, net.Addr(&net.TCPAddr{IP: net.ParseIP("10.0.0.1"), Port: 443}))
	r = r.WithContext(request.WithReceivedTimestamp(ctx, e.clk.Now().Add(-time.Minute)))
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	return w.Code
}

// hold sends n held requests from the own address and waits until they
// run.
func (e *ownEnv) hold(n int) chan int {
	done := make(chan int, n)
	for range n {
		go func() { done <- e.send(local, "/hold") }()
		<-e.entered
	}
	return done
}

// later sends one request from the own address, waits until it waits on
// the clock, runs step and returns its code.
func (e *ownEnv) later(t *testing.T, step func()) int {
	t.Helper()
	got := make(chan int, 1)
	go func() { got <- e.send(local, "/api") }()
	deadline := time.Now().Add(10 * time.Second)
	for !e.clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the request does not wait")
		}
		time.Sleep(time.Millisecond)
	}
	step()
	return <-got
}

const local = "10.0.0.1:5555"

// Requests without credentials from the hub's own address take bounds of
// their own (sixth outside review, #6): past its places or its burst a
// request waits, is served when a place or token comes within
// ownAnonymousWait and refused after that; the hub's own dials are never
// bounded. A fake clock: each wait ends when the test steps it.
func TestAnonymousOwnAddress(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, e *ownEnv) (got, want int)
	}{
		{"waits for a place given back", func(t *testing.T, e *ownEnv) (int, int) {
			held := e.hold(2)
			defer func() { close(e.release); <-held; <-held }()
			return e.later(t, func() { e.release <- struct{}{} }), http.StatusOK
		}},
		{"refused past the wait for a place", func(t *testing.T, e *ownEnv) (int, int) {
			held := e.hold(2)
			defer func() { close(e.release); <-held; <-held }()
			return e.later(t, func() { e.clk.Step(ownAnonymousWait) }), http.StatusTooManyRequests
		}},
		{"waits for its token past the burst", func(t *testing.T, e *ownEnv) (int, int) {
			for range 4 {
				if got := e.send(local, "/api"); got != http.StatusOK {
					return got, http.StatusOK
				}
			}
			return e.later(t, func() { e.clk.Step(500 * time.Millisecond) }), http.StatusOK
		}},
		{"the hub's own dial is not bounded, nor other prefixes touched", func(t *testing.T, e *ownEnv) (int, int) {
			for range 10 {
				if got := e.send("10.0.0.1:7777", "/api"); got != http.StatusOK {
					return got, http.StatusOK
				}
			}
			for range 4 {
				_ = e.send(local, "/api")
			}
			return e.send("192.0.2.1:5555", "/api"), http.StatusOK
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := tc.run(t, newOwnEnv()); got != want {
				t.Errorf("got %d, want %d", got, want)
			}
		})
	}
}
