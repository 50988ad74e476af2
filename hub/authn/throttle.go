package authn

import (
	"crypto/sha256"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"

	"github.com/wharfhub/wharf/hub/login"
)

// ThrottleOptions are the flags of the failed-authentication throttle.
type ThrottleOptions struct {
	// FailureRate is how many failed authentications per second an
	// address earns back; FailureBurst how many it may fail in a row.
	FailureRate  float64
	FailureBurst int
}

// NewThrottleOptions returns the defaults: those of the login endpoints.
func NewThrottleOptions() *ThrottleOptions {
	return &ThrottleOptions{FailureRate: 1, FailureBurst: 20}
}

// AddFlags registers --authn-failure-rate-limit and --authn-failure-rate-burst.
func (o *ThrottleOptions) AddFlags(fs *pflag.FlagSet) {
	fs.Float64Var(&o.FailureRate, "authn-failure-rate-limit", o.FailureRate, "Failed authentications per second per client address on the API and provider routes; an address over budget gets 429 for credentials it has not used successfully before. X-Forwarded-For is believed from --trusted-proxy-cidrs.")
	fs.IntVar(&o.FailureBurst, "authn-failure-rate-burst", o.FailureBurst, "Failed authentications in a row per client address before --authn-failure-rate-limit applies.")
}

// Validate checks the flags.
func (o *ThrottleOptions) Validate() []error {
	if o.FailureRate <= 0 || o.FailureBurst < 1 {
		return []error{fmt.Errorf("--authn-failure-rate-limit must be positive and --authn-failure-rate-burst at least 1")}
	}
	return nil
}

// Throttle limits failed authentication per client address. See the
// package doc for the policy and why over-budget requests are refused
// unevaluated unless their credential is known to be good.
type Throttle struct {
	failures *login.RateLimiter
	trusted  []*net.IPNet
	// session is the cookie that carries a browser session, a credential
	// like the Authorization header.
	session string

	mu sync.Mutex
	// good holds digests of credentials that authenticated, bounded.
	good *lru.Cache
}

// NewThrottle returns a throttle charging failures at o's rate, believing
// X-Forwarded-For from trusted, reading the session credential from cookie
// session, on clock c.
func NewThrottle(o *ThrottleOptions, trusted []*net.IPNet, session string, c clock.PassiveClock) *Throttle {
	return &Throttle{
		failures: login.NewRateLimiter(o.FailureRate, o.FailureBurst, 10000, trusted, c),
		trusted:  trusted,
		session:  session,
		good:     lru.New(10000),
	}
}

// credential is what a request authenticates with: its Authorization
// header, else its session cookie, else "" (nothing to guess with).
func (t *Throttle) credential(r *http.Request) string {
	if v := r.Header.Values("Authorization"); len(v) > 0 {
		return strings.Join(v, "\n")
	}
	if t.session != "" {
		if c, err := r.Cookie(t.session); err == nil && c.Value != "" {
			return "cookie:" + c.Value
		}
	}
	return ""
}

// digest keeps credentials out of memory structures that outlive the
// request, and out of anything a heap dump would show in clear.
func digest(cred string) [sha256.Size]byte { return sha256.Sum256([]byte(cred)) }

// Remember marks a credential as known good, as if it had authenticated
// (the hub's own loopback token, say).
func (t *Throttle) Remember(cred string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.good.Add(digest(cred), struct{}{})
}

func (t *Throttle) known(cred string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.good.Get(digest(cred))
	return ok
}

// Authenticator wraps the hub's request authenticator: a failure with a
// credential charges the client address, a success remembers the
// credential as known good.
func (t *Throttle) Authenticator(delegate authenticator.Request) authenticator.Request {
	return authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
		// Read before delegating: authentication deletes the header.
		cred := t.credential(r)
		resp, ok, err := delegate.AuthenticateRequest(r)
		switch {
		case cred == "":
		case ok && err == nil:
			t.Remember(cred)
		default:
			t.failures.Charge(login.ClientAddress(r, t.trusted))
		}
		return resp, ok, err
	})
}

// WithThrottle refuses, with 429 and Retry-After, a request whose client
// address is over its failure budget unless its credential is known good.
// It must run before authentication, so that a refused guess is never
// evaluated. Requests without a credential pass: they guess nothing.
func (t *Throttle) WithThrottle(delegate http.Handler, s runtime.NegotiatedSerializer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cred := t.credential(r)
		if cred == "" {
			delegate.ServeHTTP(w, r)
			return
		}
		addr := login.ClientAddress(r, t.trusted)
		over, wait := t.failures.Exhausted(addr)
		if !over || t.known(cred) {
			delegate.ServeHTTP(w, r)
			return
		}
		klog.FromContext(r.Context()).V(2).Info("Throttling failed authentication", "address", addr, "path", r.URL.Path)
		secs := max(int((wait+time.Second-1)/time.Second), 1)
		responsewriters.ErrorNegotiated(apierrors.NewTooManyRequests("too many failed authentication attempts, retry later", secs), s, schema.GroupVersion{}, w, r)
	})
}
