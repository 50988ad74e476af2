package authn

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/user"
	genericfilters "k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
)

// throttleStep is one request of a sequence: from addr (the peer, or the
// client behind the trusted proxy 10.0.0.1 with xff), with auth as the
// Authorization header ("" for none), after advancing the clock by wait.
type throttleStep struct {
	name       string
	wait       time.Duration
	addr, xff  string
	auth       string
	auth2      string // a second Authorization value
	cookie     string
	want       int
	retryAfter string
}

func TestThrottle(t *testing.T) {
	const good, good2 = "Bearer good-token", "Bearer other-good-token"
	for _, tc := range []struct {
		name  string
		opts  *ThrottleOptions
		steps []throttleStep
	}{
		{name: "failures use up the budget; known-good credentials still pass", steps: []throttleStep{
			{name: "bad", addr: "198.51.100.1", auth: "Bearer bad1", want: 401},
			{name: "good is remembered", addr: "198.51.100.1", auth: good, want: 200},
			{name: "bad takes the last token", addr: "198.51.100.1", auth: "Bearer bad2", want: 401},
			{name: "over budget: refused unevaluated", addr: "198.51.100.1", auth: "Bearer bad3", want: 429, retryAfter: "1"},
			{name: "a known-good credential is still evaluated", addr: "198.51.100.1", auth: good, want: 200},
			{name: "a valid credential never seen here waits", addr: "198.51.100.1", auth: good2, want: 429, retryAfter: "1"},
			{name: "other addresses are not penalised", addr: "203.0.113.5", auth: "Bearer bad4", want: 401},
			{name: "no credential guesses nothing and passes", addr: "198.51.100.1", want: 401},
			{name: "a session cookie not known good waits (no seal check here)", addr: "198.51.100.1", cookie: "forged", want: 429},
			{name: "a JWT not known good waits too (review row 34)", addr: "198.51.100.1", auth: "Bearer eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln", want: 429},
			{name: "JWT-like but not base64url: guessable, refused", addr: "198.51.100.1", auth: "Bearer a.b.c!", want: 429},
			{name: "the bucket refills at the rate", wait: time.Second, addr: "198.51.100.1", auth: good2, want: 200},
			{name: "now remembered", addr: "198.51.100.1", auth: good2, want: 200},
		}},
		{name: "a second Authorization value is no new credential", steps: []throttleStep{
			{addr: "198.51.100.9", auth: good, auth2: "Bearer x1", want: 200},
			{addr: "198.51.100.9", auth: "Bearer bad1", want: 401},
			{addr: "198.51.100.9", auth: "Bearer bad2", want: 401},
			{name: "remembered by its first value", addr: "198.51.100.9", auth: good, auth2: "Bearer x2", want: 200},
			{name: "a bad first value is refused whatever follows", addr: "198.51.100.9", auth: "Bearer bad3", auth2: good, want: 429},
		}},
		{name: "known good from one address is no bypass at another", steps: []throttleStep{
			{name: "owner uses it", addr: "203.0.113.7", auth: good, want: 200},
			{addr: "198.51.100.8", auth: "Bearer bad1", want: 401},
			{addr: "198.51.100.8", auth: "Bearer bad2", want: 401},
			{name: "the guesser's correct guess is not evaluated", addr: "198.51.100.8", auth: good, want: 429},
			{name: "the hub's own tokens pass everywhere", addr: "198.51.100.8", auth: "Bearer remembered-by-hub", want: 401},
		}},
		{name: "refused requests are not charged again", steps: []throttleStep{
			{addr: "198.51.100.2", auth: "Bearer x", want: 401},
			{addr: "198.51.100.2", auth: "Bearer x", want: 401},
			{addr: "198.51.100.2", auth: "Bearer x", want: 429},
			{addr: "198.51.100.2", auth: "Bearer x", want: 429},
			{wait: time.Second, addr: "198.51.100.2", auth: "Bearer x", want: 401},
			{addr: "198.51.100.2", auth: "Bearer x", want: 429, retryAfter: "1"},
		}},
		{name: "X-Forwarded-For is believed from trusted proxies only", steps: []throttleStep{
			{addr: "10.0.0.1", xff: "198.51.100.3", auth: "Bearer x", want: 401},
			{addr: "10.0.0.1", xff: "198.51.100.3", auth: "Bearer x", want: 401},
			{name: "same client behind the proxy", addr: "10.0.0.1", xff: "198.51.100.3", auth: "Bearer x", want: 429},
			{name: "client-written entries are ignored", addr: "10.0.0.1", xff: "192.0.2.1, 198.51.100.3", auth: "Bearer x", want: 429},
			{name: "another client behind the proxy", addr: "10.0.0.1", xff: "198.51.100.4", auth: "Bearer x", want: 401},
			{name: "an untrusted peer cannot pose as another client", addr: "198.51.100.3", xff: "198.51.100.9", auth: "Bearer x", want: 429},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(time.Unix(1e9, 0))
			_, proxies, _ := net.ParseCIDR("10.0.0.0/8")
			opts := tc.opts
			if opts == nil {
				opts = &ThrottleOptions{FailureRate: 1, FailureBurst: 2}
			}
			th := NewThrottle(opts, []*net.IPNet{proxies}, "wharf_session", clk)
			th.Remember("Bearer remembered-by-hub")
			h := throttledServer(t, th, strings.TrimPrefix(good, "Bearer "), strings.TrimPrefix(good2, "Bearer "))
			for i, s := range tc.steps {
				clk.SetTime(clk.Now().Add(s.wait))
				r := httptest.NewRequest(http.MethodGet, "/api", nil)
				r.RemoteAddr = s.addr + ":4444"
				if s.xff != "" {
					r.Header.Set("X-Forwarded-For", s.xff)
				}
				if s.auth != "" {
					r.Header.Set("Authorization", s.auth)
				}
				if s.auth2 != "" {
					r.Header.Add("Authorization", s.auth2)
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
					if !strings.Contains(w.Body.String(), `"reason":"TooManyRequests"`) || strings.Contains(w.Body.String(), "bad") {
						t.Errorf("step %d: body %s", i, w.Body)
					}
					if got := w.Header().Get("Retry-After"); got == "" || (s.retryAfter != "" && got != s.retryAfter) {
						t.Errorf("step %d: Retry-After %q, want %q", i, got, s.retryAfter)
					}
					// Answered at once, it takes its connection with it
					// (fourth outside review, attempts 7 and 8).
					if got := w.Header().Get("Connection"); got != "close" {
						t.Errorf("step %d: Connection %q, want close", i, got)
					}
				} else if got := w.Header().Get("Connection"); got != "" {
					t.Errorf("step %d: %d with Connection %q", i, w.Code, got)
				}
			}
		})
	}
}

// throttledServer is the hub's arrangement: the throttle's filter in front
// of upstream's authentication filter over the throttled real static
// token authenticator, answering 200 once authenticated.
func throttledServer(t *testing.T, th *Throttle, tokens ...string) http.Handler {
	t.Helper()
	var csv strings.Builder
	for i, tok := range tokens {
		csv.WriteString(tok + ",user" + string(rune('a'+i)) + ",uid" + string(rune('a'+i)) + "\n")
	}
	file := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(file, []byte(csv.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	static, err := StaticTokens("admin-token-unused", &user.DefaultInfo{Name: "admin"}, file)
	if err != nil {
		t.Fatal(err)
	}
	th.WithCheapTokens(static)
	var auth authenticator.Request = bearertoken.New(static)
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	failed := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) })
	return th.WithThrottle(genericfilters.WithAuthentication(ok, th.Authenticator(auth), failed, nil, nil), scheme.Codecs.WithoutConversion())
}
