package authn

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// JWT-shaped tokens, as a signed token looks to the throttle. The static
// token authenticator accepts the first three (a real authenticator, so
// that success and failure are real); the throttle cannot tell them from
// service-account or OIDC tokens, which is the point.
const (
	jwtGood   = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJnb29kIn0.c2lnMQ"
	jwtOther  = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJvdGhlciJ9.c2lnMg"
	jwtMinted = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJtaW50ZWQifQ.c2lnMw"
	jwtGone   = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJnb25lIn0.c2lnNA"
)

func bogusJWT(i int) string {
	return "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.Ym9ndXM" + strings.Repeat("x", i+1)
}

// TestThrottleSealed (outside attack review, row 34): a flood of bogus
// JWT-shaped tokens, and of forged session cookies, from one address is
// refused unevaluated once the address is over budget, as guesses of
// opaque tokens are; signed credentials known good anywhere, minted by
// the hub, or (cookies) sealed by the hub still pass. The hub-wide budget
// bounds a flood spread over addresses. Untimed: a fake clock.
func TestThrottleSealed(t *testing.T) {
	const a, b = "198.51.100.30", "203.0.113.30"
	type step struct {
		name   string
		addr   string
		auth   string
		cookie string
		want   int
	}
	for _, tc := range []struct {
		name  string
		opts  ThrottleOptions
		steps []step
	}{
		{name: "per address", opts: ThrottleOptions{FailureRate: 1, FailureBurst: 2}, steps: []step{
			{name: "a JWT that works", addr: a, auth: jwtGood, want: 200},
			{name: "one bad JWT is a plain 401", addr: a, auth: bogusJWT(0), want: 401},
			{addr: a, auth: bogusJWT(1), want: 401},
			{name: "the flood is refused unevaluated", addr: a, auth: bogusJWT(2), want: 429},
			{addr: a, auth: bogusJWT(3), want: 429},
			{name: "a JWT known good still passes", addr: a, auth: jwtGood, want: 200},
			{name: "a JWT never seen waits here", addr: a, auth: jwtOther, want: 429},
			{name: "it works elsewhere", addr: b, auth: jwtOther, want: 200},
			{name: "and is then known good everywhere: nobody guessed it", addr: a, auth: jwtOther, want: 200},
			{name: "a token the hub minted passes unused", addr: a, auth: jwtMinted, want: 200},
			{name: "known good, then failing: evaluated once", addr: a, auth: jwtGone, want: 401},
			{name: "then forgotten", addr: a, auth: jwtGone, want: 429},
			{name: "a forged cookie waits", addr: a, cookie: "forged", want: 429},
			{name: "a cookie sealed by the hub is evaluated", addr: a, cookie: "sealed-but-ended", want: 401},
			{name: "and, failed, waits from then on", addr: a, cookie: "sealed-but-ended", want: 429},
			{name: "the other address is not throttled", addr: b, auth: bogusJWT(4), want: 401},
		}},
		{name: "hub-wide", opts: ThrottleOptions{FailureRate: 1, FailureBurst: 5, FailureRateTotal: 1, FailureBurstTotal: 3}, steps: []step{
			{name: "known good before the flood", addr: "192.0.2.9", auth: "Bearer good-token", want: 200},
			{addr: "192.0.2.1", auth: bogusJWT(0), want: 401},
			{addr: "192.0.2.2", auth: bogusJWT(1), want: 401},
			{addr: "192.0.2.3", auth: "Bearer guess", want: 401},
			{name: "the hub is over; a JWT from a fresh address in a prefix that failed lately waits (C-F)", addr: "192.0.2.4", auth: bogusJWT(2), want: 429},
			{name: "the hub is over; a JWT from an address and prefix that never failed is evaluated", addr: "198.51.100.4", auth: bogusJWT(2), want: 401},
			{name: "that address then waits for its token back", addr: "198.51.100.4", auth: bogusJWT(3), want: 429},
			{name: "and so does its prefix, drained", addr: "198.51.100.10", auth: bogusJWT(4), want: 429},
			{name: "a wrong guess within the address's budget is refused, and charged", addr: "192.0.2.5", auth: "Bearer guess", want: 429},
			{name: "a valid token never used, from an address that never failed, is served (B-F)", addr: "192.0.2.7", auth: "Bearer fresh-token", want: 200},
			{name: "so it is from an address within its own budget", addr: "192.0.2.5", auth: "Bearer fresh-token-2", want: 200},
			{addr: "192.0.2.5", auth: "Bearer guess", want: 429},
			{addr: "192.0.2.5", auth: "Bearer guess", want: 429},
			{addr: "192.0.2.5", auth: "Bearer guess", want: 429},
			{addr: "192.0.2.5", auth: "Bearer guess", want: 429},
			{name: "over its own budget an address gets 429 for what it never used", addr: "192.0.2.5", auth: "Bearer fresh-token", want: 429},
			{name: "but what worked there before passes", addr: "192.0.2.5", auth: "Bearer fresh-token-2", want: 200},
			{name: "known-good credentials still pass", addr: "192.0.2.9", auth: "Bearer good-token", want: 200},
			{name: "so do the hub's own", addr: "192.0.2.6", auth: jwtMinted, want: 200},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(time.Unix(1e9, 0))
			opts := tc.opts
			th := NewThrottle(&opts, nil, "wharf_session", clk)
			th.WithSessionCheck(func(r *http.Request) bool {
				c, err := r.Cookie("wharf_session")
				return err == nil && strings.HasPrefix(c.Value, "sealed")
			})
			th.Remember("Bearer " + jwtMinted)
			th.Remember("Bearer " + jwtGone)
			h := throttledServer(t, th, jwtGood, jwtOther, jwtMinted, "good-token", "fresh-token", "fresh-token-2")
			for i, s := range tc.steps {
				r := httptest.NewRequest(http.MethodGet, "/api", nil)
				r.RemoteAddr = s.addr + ":4444"
				if s.auth != "" {
					auth := s.auth
					if !strings.HasPrefix(auth, "Bearer ") {
						auth = "Bearer " + auth
					}
					r.Header.Set("Authorization", auth)
				}
				if s.cookie != "" {
					r.AddCookie(&http.Cookie{Name: "wharf_session", Value: s.cookie})
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != s.want {
					t.Fatalf("step %d %q: %d, want %d: %s", i, s.name, w.Code, s.want, w.Body)
				}
				if s.want == http.StatusTooManyRequests {
					if !strings.Contains(w.Body.String(), `"reason":"TooManyRequests"`) || w.Header().Get("Retry-After") == "" {
						t.Errorf("step %d: Retry-After %q, body %s", i, w.Header().Get("Retry-After"), w.Body)
					}
				}
			}
		})
	}
}
