package login

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func cidrs(t *testing.T, s ...string) []*net.IPNet {
	t.Helper()
	var out []*net.IPNet
	for _, c := range s {
		_, n, err := net.ParseCIDR(c)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

func TestClientAddress(t *testing.T) {
	trusted := cidrs(t, "10.0.0.0/8", "fd00::/8")
	for _, tc := range []struct {
		name    string
		peer    string
		xff     []string
		trusted bool
		want    string
	}{
		{name: "no proxies trusted: peer, XFF ignored", peer: "203.0.113.9:5555", xff: []string{"198.51.100.1"}, want: "203.0.113.9"},
		{name: "untrusted peer with trust configured: XFF ignored", peer: "203.0.113.9:5555", xff: []string{"198.51.100.1"}, trusted: true, want: "203.0.113.9"},
		{name: "trusted proxy: client from XFF", peer: "10.1.2.3:443", xff: []string{"198.51.100.1"}, trusted: true, want: "198.51.100.1"},
		{name: "client-supplied XFF entries are not believed", peer: "10.1.2.3:443", xff: []string{"1.1.1.1, 2.2.2.2, 198.51.100.1"}, trusted: true, want: "198.51.100.1"},
		{name: "chain of trusted proxies", peer: "10.1.2.3:443", xff: []string{"198.51.100.1, 10.9.9.9", "10.8.8.8"}, trusted: true, want: "198.51.100.1"},
		{name: "trusted proxy without XFF", peer: "10.1.2.3:443", trusted: true, want: "10.1.2.3"},
		{name: "garbage hop stops the walk", peer: "10.1.2.3:443", xff: []string{"198.51.100.1, nonsense, 10.9.9.9"}, trusted: true, want: "10.9.9.9"},
		{name: "ipv6", peer: "[fd00::1]:443", xff: []string{"2001:db8::7"}, trusted: true, want: "2001:db8::7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/auth/login", nil)
			r.RemoteAddr = tc.peer
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			var tr []*net.IPNet
			if tc.trusted {
				tr = trusted
			}
			if got := ClientAddress(r, tr); got != tc.want {
				t.Fatalf("ClientAddress = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRateLimit drives the limiter through its HTTP wrapper on a fake
// clock: a burst per address, 429 Status with Retry-After beyond it,
// addresses independent, and X-Forwarded-For only from a trusted proxy.
func TestRateLimit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		trusted []string
		peer    string
		xffs    []string // one client per entry, all through peer
		// separate: whether the clients get separate buckets.
		separate bool
	}{
		{name: "direct clients", peer: "", separate: true},
		{name: "behind an untrusted proxy: one bucket", peer: "192.0.2.1:1", xffs: []string{"198.51.100.1", "198.51.100.2"}, separate: false},
		{name: "behind a trusted proxy: per client", trusted: []string{"192.0.2.0/24"}, peer: "192.0.2.1:1", xffs: []string{"198.51.100.1", "198.51.100.2"}, separate: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(time.Unix(1_800_000_000, 0))
			l := NewRateLimiter(0.5, 3, 100, cidrs(t, tc.trusted...), clk)
			h := l.WithRateLimit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
			do := func(client int) *httptest.ResponseRecorder {
				r := httptest.NewRequest(http.MethodGet, "/auth/login", nil)
				if tc.peer == "" {
					r.RemoteAddr = "198.51.100." + strconv.Itoa(client+1) + ":1234"
				} else {
					r.RemoteAddr = tc.peer
					r.Header.Set("X-Forwarded-For", tc.xffs[client])
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				return w
			}
			for i := range 3 {
				if w := do(0); w.Code != http.StatusNoContent {
					t.Fatalf("request %d within burst: %d", i, w.Code)
				}
			}
			w := do(0)
			if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "2" || w.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("over the limit: %d Retry-After=%q %s", w.Code, w.Header().Get("Retry-After"), w.Body)
			}
			if w := do(1); (w.Code == http.StatusNoContent) != tc.separate {
				t.Fatalf("second client: %d, separate buckets expected=%v", w.Code, tc.separate)
			}
			clk.SetTime(clk.Now().Add(2 * time.Second))
			if w := do(0); w.Code != http.StatusNoContent {
				t.Fatalf("after refill: %d", w.Code)
			}
		})
	}
}

// TestRateLimitBoundedMemory: many addresses never grow the LRU past
// its size.
func TestRateLimitBoundedMemory(t *testing.T) {
	l := NewRateLimiter(1, 1, 50, nil, clocktesting.NewFakePassiveClock(time.Now()))
	for i := range 1000 {
		l.allow("198.51." + strconv.Itoa(i/256) + "." + strconv.Itoa(i%256))
	}
	if n := l.buckets.Len(); n != 50 {
		t.Fatalf("%d buckets, want 50", n)
	}
}

// TestRateLimiterChargeAndExhausted covers the split use (hub/authn's
// failure throttle): Charge takes tokens only for some requests, Exhausted
// looks without taking one.
func TestRateLimiterChargeAndExhausted(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1e9, 0))
	l := NewRateLimiter(1, 2, 10, nil, clk)
	for i, s := range []struct {
		wait   time.Duration
		charge bool
		over   bool
		after  time.Duration
	}{
		{over: false},               // never seen
		{charge: true, over: false}, // one left
		{charge: true, over: true, after: time.Second},
		{over: true, after: time.Second},               // looking takes nothing
		{charge: true, over: true, after: time.Second}, // over budget stays so
		{wait: 500 * time.Millisecond, over: true, after: 500 * time.Millisecond},
		{wait: 500 * time.Millisecond, over: false},
		{charge: true, over: true, after: time.Second},
	} {
		clk.SetTime(clk.Now().Add(s.wait))
		if s.charge {
			l.Charge("a")
		}
		over, after := l.Exhausted("a")
		if over != s.over || after != s.after {
			t.Fatalf("step %d: Exhausted = %v %v, want %v %v", i, over, after, s.over, s.after)
		}
	}
	if over, _ := l.Exhausted("b"); over {
		t.Fatal("another address is over budget")
	}
}
