package login

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/wharfhub/wharf/hub/buckets"
)

// RateLimiter limits requests per client address with a token bucket per
// address (golang.org/x/time/rate). The buckets live in a bounded LRU, so
// a flood of distinct addresses costs bounded memory; an evicted address
// starts again with a full bucket, which only helps an attacker that
// already controls more addresses than the LRU holds.
type RateLimiter struct {
	limit   rate.Limit
	burst   int
	trusted []*net.IPNet
	clock   clock.PassiveClock

	buckets *buckets.Keyed[*rate.Limiter]
}

// NewRateLimiter allows perSecond requests per address with bursts of
// burst, tracking at most size addresses. X-Forwarded-For is believed only
// from peers within trusted.
func NewRateLimiter(perSecond float64, burst, size int, trusted []*net.IPNet, c clock.PassiveClock) *RateLimiter {
	return &RateLimiter{limit: rate.Limit(perSecond), burst: burst, trusted: trusted, clock: c,
		buckets: buckets.New(size, func() *rate.Limiter { return rate.NewLimiter(rate.Limit(perSecond), burst) })}
}

// Exhausted reports, without taking a token, whether addr is over its
// limit and if so how long until a token is available. An address never
// seen is not. It lets a caller charge only some requests (Charge) and
// refuse the rest while over budget. Every request asks (the authn
// throttle): while no address was ever charged it returns at once, with
// no lock taken (buckets.Keyed.Peek).
func (l *RateLimiter) Exhausted(addr string) (exhausted bool, wait time.Duration) {
	l.buckets.Peek(addr, func(b *rate.Limiter) {
		now := l.clock.Now()
		if b.TokensAt(now) >= 1 {
			return
		}
		exhausted = true
		r := b.ReserveN(now, 1)
		if !r.OK() {
			wait = time.Minute
			return
		}
		wait = r.DelayFrom(now)
		r.CancelAt(now)
	})
	return exhausted, wait
}

// Untouched reports whether addr's bucket is full: the address has not
// been charged since it earned its last token back. An address never seen
// is untouched.
func (l *RateLimiter) Untouched(addr string) bool {
	untouched := true
	l.buckets.Peek(addr, func(b *rate.Limiter) { untouched = b.TokensAt(l.clock.Now()) >= float64(l.burst) })
	return untouched
}

// Charge takes a token for addr if one is left; an address already over
// budget stays so.
func (l *RateLimiter) Charge(addr string) {
	l.buckets.Do(addr, func(b *rate.Limiter) { b.AllowN(l.clock.Now(), 1) })
}

// Allow takes a token for addr and reports whether one was left.
func (l *RateLimiter) Allow(addr string) bool {
	ok, _ := l.allow(addr)
	return ok
}

// Drain takes every token addr has left: an address let through once
// beyond a hub-wide bound pays its whole burst for it, so that one who
// rotates over many addresses gets each through once per refill of its
// burst, not once per token (third outside review, C-E and C-F).
func (l *RateLimiter) Drain(addr string) {
	l.buckets.Do(addr, func(b *rate.Limiter) {
		now := l.clock.Now()
		if n := int(b.TokensAt(now)); n > 0 {
			b.AllowN(now, n)
		}
	})
}

// allow takes a token for addr, or says how long until one is available.
func (l *RateLimiter) allow(addr string) (ok bool, wait time.Duration) {
	l.buckets.Do(addr, func(b *rate.Limiter) {
		now := l.clock.Now()
		r := b.ReserveN(now, 1)
		if !r.OK() {
			wait = time.Minute
			return
		}
		if d := r.DelayFrom(now); d > 0 {
			r.CancelAt(now)
			wait = d
			return
		}
		ok = true
	})
	return ok, wait
}

// WithRateLimit answers 429 with Retry-After when the client address of a
// request is over its limit.
func (l *RateLimiter) WithRateLimit(delegate http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ok, wait := l.allow(ClientAddress(r, l.trusted)); !ok {
			secs := int((wait + time.Second - 1) / time.Second)
			w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
			writeStatus(w, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, "too many login attempts, retry later")
			return
		}
		delegate.ServeHTTP(w, r)
	})
}

// ClientAddress is the address a request comes from: the direct peer,
// unless the peer is a trusted proxy. Then X-Forwarded-For is read from
// the right (the entry the trusted proxy appended) leftwards, skipping
// further trusted proxies; the first untrusted entry is the client. The
// entries left of it were written by the client and are never believed.
func ClientAddress(r *http.Request, trusted []*net.IPNet) string {
	peer := HostOf(r.RemoteAddr)
	ip := net.ParseIP(peer)
	if ip == nil || !within(ip, trusted) {
		return peer
	}
	var hops []string
	for _, h := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(h, ",")...)
	}
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		hop := net.ParseIP(HostOf(strings.TrimSpace(hops[i])))
		if hop == nil {
			break // garbage: stop at the last address we could trust
		}
		client = hop.String()
		if !within(hop, trusted) {
			break
		}
	}
	return client
}

func within(ip net.IP, nets []*net.IPNet) bool {
	for _, n := range nets {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}
