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
	// good holds digests of (client address, credential) pairs that
	// authenticated, bounded. Keyed on the address too, so that a token
	// its owner used from elsewhere is no bypass for a guesser here.
	good *lru.Cache
}

// anyAddress files credentials the hub itself knows to be good (Remember)
// for every address.
const anyAddress = "*"

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
// unguessable reports whether the credential is signed or sealed by a key
// the caller does not have: a JWT (service-account and OIDC tokens) or the
// hub's AEAD-sealed session cookie. Guessing one is hopeless, so refusing
// it while its address is throttled would protect nothing and lock out the
// callers sharing that address (a NAT, a proxy): a fresh service-account
// token, a rotated ID token, a first browser login.
func (t *Throttle) credential(r *http.Request) (cred string, unguessable bool) {
	// The first Authorization value is the one upstream's bearer token
	// authenticator reads; further values change nothing it evaluates, so
	// they must not make a new credential either (one valid token with
	// varying second headers would otherwise flush the known-good set).
	if v := r.Header.Get("Authorization"); v != "" {
		if tok, ok := strings.CutPrefix(v, "Bearer "); ok && isJWT(strings.TrimSpace(tok)) {
			return v, true
		}
		return v, false
	}
	if t.session != "" {
		if c, err := r.Cookie(t.session); err == nil && c.Value != "" {
			return "cookie:" + c.Value, true
		}
	}
	return "", false
}

// isJWT reports whether tok has a JWS compact serialization's shape: three
// non-empty base64url segments. Its signature is checked by whichever
// authenticator accepts it; a forged one fails there and is charged.
func isJWT(tok string) bool {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if p == "" || strings.IndexFunc(p, func(c rune) bool {
			return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_')
		}) >= 0 {
			return false
		}
	}
	return true
}

// digest keeps credentials out of memory structures that outlive the
// request, and out of anything a heap dump would show in clear.
func digest(addr, cred string) [sha256.Size]byte {
	return sha256.Sum256([]byte(addr + "\x00" + cred))
}

// Remember marks a credential as known good from every address, as if it
// had authenticated (the hub's own loopback and admin tokens, say).
func (t *Throttle) Remember(cred string) { t.remember(anyAddress, cred) }

func (t *Throttle) remember(addr, cred string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.good.Add(digest(addr, cred), struct{}{})
}

func (t *Throttle) known(addr, cred string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.good.Get(digest(addr, cred)); ok {
		return true
	}
	_, ok := t.good.Get(digest(anyAddress, cred))
	return ok
}

// Authenticator wraps the hub's request authenticator: a failure with a
// credential charges the client address, a success remembers the
// credential as known good.
func (t *Throttle) Authenticator(delegate authenticator.Request) authenticator.Request {
	return authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
		// Read before delegating: authentication deletes the header.
		cred, unguessable := t.credential(r)
		resp, ok, err := delegate.AuthenticateRequest(r)
		switch {
		case cred == "":
		case ok && err == nil:
			// Unguessable credentials pass unremembered; remembering
			// them would only let a holder of many tokens flush the set.
			if !unguessable {
				t.remember(login.ClientAddress(r, t.trusted), cred)
			}
		default:
			t.failures.Charge(login.ClientAddress(r, t.trusted))
		}
		return resp, ok, err
	})
}

// WithThrottle refuses, with 429 and Retry-After, a request whose client
// address is over its failure budget, unless its credential is unguessable
// (see credential) or authenticated from this address before. It must run
// before authentication, so that a refused guess is never evaluated.
// Requests without a credential pass: they guess nothing.
func (t *Throttle) WithThrottle(delegate http.Handler, s runtime.NegotiatedSerializer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		addr := login.ClientAddress(r, t.trusted)
		// TokenReview charges its guesses to this address (review.go).
		r = r.WithContext(withClientAddress(r.Context(), addr))
		cred, unguessable := t.credential(r)
		if cred == "" || unguessable {
			delegate.ServeHTTP(w, r)
			return
		}
		over, wait := t.failures.Exhausted(addr)
		if !over || t.known(addr, cred) {
			delegate.ServeHTTP(w, r)
			return
		}
		klog.FromContext(r.Context()).V(2).Info("Throttling failed authentication", "address", addr, "path", r.URL.Path)
		secs := max(int((wait+time.Second-1)/time.Second), 1)
		responsewriters.ErrorNegotiated(apierrors.NewTooManyRequests("too many failed authentication attempts, retry later", secs), s, schema.GroupVersion{}, w, r)
	})
}
