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

// Requests without credentials are bounded per prefix in flight and per
// second, then hub-wide, where a quiet prefix still gets one; requests
// with a credential are not. Untimed: a
// fake clock, and requests that arrived long ago, so refusals are not
// held.
func TestAnonymousLimit(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1e9, 0))
	// Hub-wide: 10/s (burst 10), 8 in flight; per prefix 2/s (burst 4),
	// 2 in flight.
	a := NewAnonymous(10, 8, nil, "wharf_session", clk)
	release := make(chan struct{})
	entered := make(chan struct{}, 16)
	h := a.WithAnonymousLimit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			entered <- struct{}{}
			<-release
		}
		w.WriteHeader(http.StatusOK)
	}), scheme.NewCodecs(scheme.New()))
	send := func(from, path string, mod func(*http.Request)) int {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.RemoteAddr = from + ":5555"
		ctx := context.WithValue(r.Context(), http.LocalAddrContextKey, net.Addr(&net.TCPAddr{IP: net.ParseIP("10.0.0.1"), Port: 443}))
		r = r.WithContext(request.WithReceivedTimestamp(ctx, clk.Now().Add(-time.Minute)))
		if mod != nil {
			mod(r)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	// Two held in flight from one prefix: a third from it is refused, one
	// from another prefix is not.
	done := make(chan int, 2)
	for range 2 {
		go func() { done <- send("192.0.2.1", "/hold", nil) }()
		<-entered
	}
	if got := send("192.0.2.7", "/readyz", nil); got != http.StatusTooManyRequests {
		t.Errorf("third in flight from a prefix: %d, want 429", got)
	}
	if got := send("198.51.100.1", "/readyz", nil); got != http.StatusOK {
		t.Errorf("another prefix: %d, want 200", got)
	}
	close(release)
	<-done
	<-done
	for i, tc := range []struct {
		from string
		mod  func(*http.Request)
		want int
	}{
		// 192.0.2.0/24 took 2 of its 4 tokens (the 429 in flight took
		// none).
		{"192.0.2.1", nil, http.StatusOK},
		{"192.0.2.1", nil, http.StatusOK},
		{"192.0.2.1", nil, http.StatusTooManyRequests},
		{"192.0.2.1", func(r *http.Request) { r.Header.Set("Authorization", "Bearer x") }, http.StatusOK},
		{"192.0.2.1", func(r *http.Request) { r.AddCookie(&http.Cookie{Name: "wharf_session", Value: "v"}) }, http.StatusOK},
		// The hub's own address: its own bucket (burst 4), which took
		// nothing of the prefixes' nor the hub-wide one.
		{"10.0.0.1", nil, http.StatusOK},
		{"10.0.0.1", nil, http.StatusOK},
	} {
		if got := send(tc.from, "/api", tc.mod); got != tc.want {
			t.Errorf("%d from %s: %d, want %d", i, tc.from, got, tc.want)
		}
	}
	// Hub-wide: 10 tokens; 5 taken so far (4 from 192.0.2.0/24, 1 from
	// 198.51.100.0/24). Five more prefixes use them up.
	for k := range 5 {
		if got := send(net.IPv4(203, 0, byte(k), 1).String(), "/api", nil); got != http.StatusOK {
			t.Fatalf("prefix %d within the hub-wide rate: %d", k, got)
		}
	}
	// Over the hub-wide rate: a quiet prefix gets one, then waits.
	if got := send("203.0.200.1", "/api", nil); got != http.StatusOK {
		t.Errorf("quiet prefix over the hub-wide rate: %d, want 200", got)
	}
	if got := send("203.0.200.1", "/api", nil); got != http.StatusTooManyRequests {
		t.Errorf("the same prefix again: %d, want 429", got)
	}
	if got := send("203.0.0.1", "/api", nil); got != http.StatusTooManyRequests {
		t.Errorf("a prefix that was not quiet, over the hub-wide rate: %d, want 429", got)
	}
	// A second later the hub-wide bucket has earned 10 back.
	clk.Step(time.Second)
	if got := send("203.0.0.1", "/api", nil); got != http.StatusOK {
		t.Errorf("after a second: %d, want 200", got)
	}
}

// An upgrade without credentials (an edge agent's pickup) holds no place
// in flight for its life: more live tunnels from one prefix than its
// places, then an ordinary request from it, are all served; the rate
// still counts them.
func TestAnonymousUpgradesHoldNoPlace(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1e9, 0))
	// Per prefix: 2 in flight, 2/s with a burst of 4.
	a := NewAnonymous(10, 8, nil, "wharf_session", clk)
	release := make(chan struct{})
	entered := make(chan struct{}, 16)
	h := a.WithAnonymousLimit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/tunnel" {
			entered <- struct{}{}
			<-release
		}
		w.WriteHeader(http.StatusOK)
	}), scheme.NewCodecs(scheme.New()))
	send := func(path string, upgrade bool) int {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.RemoteAddr = "192.0.2.1:5555"
		ctx := context.WithValue(r.Context(), http.LocalAddrContextKey, net.Addr(&net.TCPAddr{IP: net.ParseIP("10.0.0.1"), Port: 443}))
		r = r.WithContext(request.WithReceivedTimestamp(ctx, clk.Now().Add(-time.Minute)))
		if upgrade {
			r.Header.Set("Connection", "Upgrade")
			r.Header.Set("Upgrade", "websocket")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	done := make(chan int, 3)
	for range 3 {
		go func() { done <- send("/tunnel", true) }()
		<-entered
	}
	if got := send("/api", false); got != http.StatusOK {
		t.Errorf("an ordinary request beside three live tunnels from its prefix: %d, want 200", got)
	}
	// The four took the prefix's burst: the rate still bounds upgrades.
	if got := send("/tunnel-again", true); got != http.StatusTooManyRequests {
		t.Errorf("an upgrade past the prefix's rate: %d, want 429", got)
	}
	close(release)
	for range 3 {
		if got := <-done; got != http.StatusOK {
			t.Errorf("tunnel: %d", got)
		}
	}
}
