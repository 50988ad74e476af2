package authn

import (
	"context"
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

	"github.com/wharfhub/wharf/hub/hangup"
	"github.com/wharfhub/wharf/hub/login"
)

// ThrottleOptions are the flags of the failed-authentication throttle.
type ThrottleOptions struct {
	// FailureRate is how many failed authentications per second an
	// address earns back; FailureBurst how many it may fail in a row.
	FailureRate  float64
	FailureBurst int
	// FailureRateTotal and FailureBurstTotal are the same budget for the
	// whole hub, whatever the address; 0 leaves it unbounded.
	FailureRateTotal  float64
	FailureBurstTotal int
}

// NewThrottleOptions returns the defaults: those of the login endpoints
// per address, and a hundred times that for the hub.
func NewThrottleOptions() *ThrottleOptions {
	return &ThrottleOptions{FailureRate: 1, FailureBurst: 20, FailureRateTotal: 100, FailureBurstTotal: 2000}
}

// AddFlags registers --authn-failure-rate-limit, --authn-failure-rate-burst
// and their hub-wide -total forms.
func (o *ThrottleOptions) AddFlags(fs *pflag.FlagSet) {
	fs.Float64Var(&o.FailureRate, "authn-failure-rate-limit", o.FailureRate, "Failed authentications per second per client address on the API and provider routes; an address over budget gets 429 for credentials not known good. X-Forwarded-For is believed from --trusted-proxy-cidrs.")
	fs.IntVar(&o.FailureBurst, "authn-failure-rate-burst", o.FailureBurst, "Failed authentications in a row per client address before --authn-failure-rate-limit applies.")
	fs.Float64Var(&o.FailureRateTotal, "authn-failure-rate-limit-total", o.FailureRateTotal, "Failed authentications per second on the whole hub, whatever the address; over budget, a credential not known good is served only if it verifies at once (an opaque token, by a lookup) or comes from an address that has not failed lately (a JWT, a session cookie); others get 429 and are charged to their address. 0 means no hub-wide bound.")
	fs.IntVar(&o.FailureBurstTotal, "authn-failure-rate-burst-total", o.FailureBurstTotal, "Failed authentications in a row on the whole hub before --authn-failure-rate-limit-total applies.")
}

// Validate checks the flags.
func (o *ThrottleOptions) Validate() []error {
	var errs []error
	if o.FailureRate <= 0 || o.FailureBurst < 1 {
		errs = append(errs, fmt.Errorf("--authn-failure-rate-limit must be positive and --authn-failure-rate-burst at least 1"))
	}
	if o.FailureRateTotal < 0 || (o.FailureRateTotal > 0 && o.FailureBurstTotal < 1) {
		errs = append(errs, fmt.Errorf("--authn-failure-rate-limit-total must not be negative, and --authn-failure-rate-burst-total must be at least 1 when it is set"))
	}
	return errs
}

// Throttle limits failed authentication per client address. See the
// package doc for the policy and why over-budget requests are refused
// unevaluated unless their credential is known to be good.
type Throttle struct {
	failures *login.RateLimiter
	// prefixes is the failure budget of each address prefix
	// (login.PrefixOf), ten times an address's: one rotating over the
	// addresses of a block shares one (third outside review, C-F).
	prefixes *login.RateLimiter
	// total is the hub-wide failure budget (one bucket), nil for none.
	total   *login.RateLimiter
	trusted []*net.IPNet
	// session is the cookie that carries a browser session, a credential
	// like the Authorization header.
	session string

	mu sync.Mutex
	// good holds digests of (client address, credential) pairs that
	// authenticated, bounded. Keyed on the address too, so that a token
	// its owner used from elsewhere is no bypass for a guesser here.
	good *lru.Cache
	// sealed holds what is known of unguessable credentials (sealed.go).
	sealed *sealedSet
	// cheap verifies guessable credentials at the cost of a lookup
	// (WithCheapTokens); nil: none is verified before authentication.
	cheap authenticator.Token
}

// anyAddress files credentials the hub itself knows to be good (Remember)
// for every address.
const anyAddress = "*"

// NewThrottle returns a throttle charging failures at o's rate, believing
// X-Forwarded-For from trusted, reading the session credential from cookie
// session, on clock c.
func NewThrottle(o *ThrottleOptions, trusted []*net.IPNet, session string, c clock.PassiveClock) *Throttle {
	t := &Throttle{
		failures: login.NewRateLimiter(o.FailureRate, o.FailureBurst, 10000, trusted, c),
		prefixes: login.NewRateLimiter(10*o.FailureRate, 10*o.FailureBurst, 10000, nil, c),
		trusted:  trusted,
		session:  session,
		good:     lru.New(10000),
		sealed:   newSealedSet(),
	}
	if o.FailureRateTotal > 0 {
		t.total = login.NewRateLimiter(o.FailureRateTotal, o.FailureBurstTotal, 1, nil, c)
	}
	return t
}

// hubWide is the one key of the hub-wide budget.
const hubWide = "*"

// WithSessionCheck sets how the throttle tells an authentic session
// cookie (sealed by the hub, so not guessable and not forgeable) without
// evaluating it: a cheap check of its seal, no store read. Without it,
// every cookie not known good waits while its address is over budget.
func (t *Throttle) WithSessionCheck(authentic func(*http.Request) bool) *Throttle {
	t.sealed.authentic = authentic
	return t
}

// WithCheapTokens sets the authenticator of every guessable credential
// the hub accepts (static and provider tokens: a lookup, cheaper than the
// 429 itself), which the throttle runs itself while only the hub-wide
// budget is used up: a credential it accepts is served (outside attack
// review B-F).
func (t *Throttle) WithCheapTokens(a authenticator.Token) *Throttle {
	t.cheap = a
	return t
}

// credential is what a request authenticates with: its Authorization
// header, else its session cookie, else "" (nothing to guess with).
// unguessable reports whether the credential is signed or sealed by a key
// the caller does not have: a JWT (service-account and OIDC tokens) or the
// hub's AEAD-sealed session cookie. Guessing one is hopeless, so it is
// known good from any address once it authenticated anywhere (sealed.go);
// but evaluating a forged one still costs a signature check and a failed
// authentication, so over budget it waits like any other credential not
// known good (outside attack review, row 34: a flood of JWT-shaped tokens
// was never throttled).
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

// over reports whether addr, and whether the whole hub, is over its
// failure budget, and how long until both have a token again.
func (t *Throttle) over(addr string) (addrOver, hubOver bool, wait time.Duration) {
	addrOver, wait = t.failures.Exhausted(addr)
	if o, w := t.prefixes.Exhausted(login.PrefixOf(addr)); o {
		addrOver, wait = true, max(wait, w)
	}
	if t.total != nil {
		if o, w := t.total.Exhausted(hubWide); o {
			hubOver, wait = true, max(wait, w)
		}
	}
	return addrOver, hubOver, wait
}

// charge counts one failed authentication from addr, and hub-wide.
func (t *Throttle) charge(addr string) {
	t.failures.Charge(addr)
	t.prefixes.Charge(login.PrefixOf(addr))
	if t.total != nil {
		t.total.Charge(hubWide)
	}
}

// verifiedWhileHubOver decides a credential not known good, from an
// address within its own budget, while the hub-wide budget is used up
// (by others: B-F drained it with random tokens from 250 addresses, and a
// valid token from an address that had never failed then got 429). A
// guessable credential is verified at once by the cheap authenticator,
// and served if it is good; if not, it is charged as any failure, so each
// address still guesses at most its own budget. An unguessable one (a JWT
// not known good: its check is a signature, the CPU the hub-wide budget
// bounds) is evaluated only from an address that has not failed since it
// earned its last token back, so a flood spread over addresses costs at
// most --authn-failure-rate-limit evaluations a second per address; a
// failure there is charged by Authenticator. The address's prefix must
// not have failed lately either, and a failure evaluated this way drains
// the prefix's whole budget (Authenticator): a flood from a fresh address
// per request (third outside review, C-F: all 401, never 429) costs a
// verification per prefix per refill of its burst.
func (t *Throttle) verifiedWhileHubOver(r *http.Request, addr, cred string, unguessable bool) bool {
	if unguessable {
		return t.failures.Untouched(addr) && t.prefixes.Untouched(login.PrefixOf(addr))
	}
	if t.cheap != nil {
		if tok, ok := strings.CutPrefix(cred, "Bearer "); ok {
			if _, ok, err := t.cheap.AuthenticateToken(r.Context(), strings.TrimSpace(tok)); ok && err == nil {
				return true
			}
		}
	}
	t.charge(addr)
	return false
}

// digest keeps credentials out of memory structures that outlive the
// request, and out of anything a heap dump would show in clear.
func digest(addr, cred string) [sha256.Size]byte {
	return sha256.Sum256([]byte(addr + "\x00" + cred))
}

// Remember marks a credential as known good from every address, as if it
// had authenticated (the hub's own loopback and admin tokens, and the
// service-account tokens it mints).
func (t *Throttle) Remember(cred string) {
	if tok, ok := strings.CutPrefix(cred, "Bearer "); ok && isJWT(strings.TrimSpace(tok)) {
		t.sealed.succeeded(cred)
		return
	}
	t.remember(anyAddress, cred)
}

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
			if unguessable {
				t.sealed.succeeded(cred)
			} else {
				t.remember(login.ClientAddress(r, t.trusted), cred)
			}
		default:
			if unguessable {
				t.sealed.failed(cred)
			}
			addr := login.ClientAddress(r, t.trusted)
			t.charge(addr)
			if exemptFrom(r.Context()) {
				t.prefixes.Drain(login.PrefixOf(addr))
			}
		}
		return resp, ok, err
	})
}

// Refused charges a request whose credential another party refused (a
// provider, for a token only it verifies: proxy.Backend.WithRefusals) to
// its client address, as a failed authentication here: past the budget,
// the address's credentials not known good get 429 unevaluated, and never
// reach the provider. A request without a credential is not charged.
func (t *Throttle) Refused(r *http.Request) {
	if cred, _ := t.credential(r); cred == "" {
		return
	}
	providerRefusals.Inc()
	t.charge(login.ClientAddress(r, t.trusted))
}

// WithThrottle refuses, with 429 and Retry-After, a request whose client
// address is over its failure budget, unless its credential is known
// good: a guessable one authenticated from this address before, an
// unguessable one authenticated anywhere before (or minted by the hub, or
// a session cookie whose seal is the hub's) and not failed since
// (sealed.go). While only the whole hub is over its budget, a credential
// not known good is decided by verifiedWhileHubOver: one that verifies is
// served, whatever others failed. It must run before authentication, so
// that a refused credential is never evaluated. Requests without a
// credential pass: they guess nothing and cost no verification.
func (t *Throttle) WithThrottle(delegate http.Handler, s runtime.NegotiatedSerializer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		addr := login.ClientAddress(r, t.trusted)
		// TokenReview charges its guesses to this address (review.go).
		r = r.WithContext(withClientAddress(r.Context(), addr))
		cred, unguessable := t.credential(r)
		if cred == "" {
			delegate.ServeHTTP(w, r)
			return
		}
		addrOver, hubOver, wait := t.over(addr)
		if (!addrOver && !hubOver) || (!unguessable && t.known(addr, cred)) || (unguessable && t.sealed.mayPass(r, cred)) {
			delegate.ServeHTTP(w, r)
			return
		}
		if !addrOver && t.verifiedWhileHubOver(r, addr, cred, unguessable) {
			if unguessable {
				r = r.WithContext(withExempt(r.Context()))
			}
			delegate.ServeHTTP(w, r)
			return
		}
		throttled.Inc()
		klog.FromContext(r.Context()).V(2).Info("Throttling failed authentication", "address", addr, "path", r.URL.Path)
		secs := max(int((wait+time.Second-1)/time.Second), 1)
		// Never held: answered at once, so its connection closes.
		hangup.UnlessHeld(w.Header(), false)
		responsewriters.ErrorNegotiated(apierrors.NewTooManyRequests("too many failed authentication attempts, retry later", secs), s, schema.GroupVersion{}, w, r)
	})
}

// exemptKey marks a request evaluated past the hub-wide failure budget
// because its address and prefix had been quiet (verifiedWhileHubOver).
type exemptKey struct{}

func withExempt(ctx context.Context) context.Context {
	return context.WithValue(ctx, exemptKey{}, true)
}

func exemptFrom(ctx context.Context) bool {
	v, _ := ctx.Value(exemptKey{}).(bool)
	return v
}
