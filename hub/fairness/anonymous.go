package fairness

import (
	"net"
	"net/http"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/wharfhub/wharf/hub/hangup"
	"github.com/wharfhub/wharf/hub/login"
)

// Anonymous bounds the requests that carry no credential at all: no
// Authorization header, no session cookie, no client certificate. They
// are the health endpoints, the portal's files, the providers' UI files,
// the login pages and bare 401s, and nothing else bounded them: the third
// outside review (C-E) flooded each from one address, 100 to 200 at once
// on kept-open connections (3,000 to 6,300 answers a second), and another
// tenant's requests fell to 2.2–28 a second while the hub's lease
// renewals took 2.5–3 s. Requests with a credential are bounded
// elsewhere: a bad one by the failure budgets (hub/authn), a good one by
// its tenant's share.
//
// Each address prefix (login.PrefixOf) has a rate and a number in flight,
// a fifth and a quarter of the hub-wide ones. Past the hub-wide bounds a
// prefix that was quiet (a kubelet probe) is still served once, for its
// whole burst. A refused request gets 429 held until RefusalHold after
// it arrived, a bounded number per prefix and hub-wide (as the tenant
// refusals, tarpit.go), so a client that sends again at once gets one
// answer a second per connection; past those bounds the 429 closes its
// connection, which then pays a metered TLS handshake (conns.go). The
// hub's own address (a process on its host) has bounds of its own
// (ownanon.go); the hub's in-process client is not bounded.
type Anonymous struct {
	perPrefix, total       *login.RateLimiter
	inFlight, perPrefixMax int
	trusted                []*net.IPNet
	session                string
	hold                   *tarpit
	own                    *ownAnonymous
	// exempt names the hub's own dials by remote address (OwnDials.Has);
	// nil: none.
	exempt func(remote string) bool

	mu      sync.Mutex
	running map[string]int // mu; by prefix
	all     int            // mu
}

// NewAnonymous bounds credential-less requests to perSecond (its burst
// one second's worth) and inFlight at once, believing X-Forwarded-For from
// trusted, reading the session credential from cookie session. nil when
// both are 0.
func NewAnonymous(perSecond float64, inFlight int, trusted []*net.IPNet, session string, c clock.WithDelayedExecution) *Anonymous {
	if perSecond <= 0 && inFlight <= 0 {
		return nil
	}
	a := &Anonymous{inFlight: inFlight, perPrefixMax: max(inFlight/4, 1), trusted: trusted, session: session,
		running: map[string]int{}, hold: newTarpit(c, RefusalHold, 128, 2048)}
	per := max(perSecond/5, 1)
	if perSecond > 0 {
		a.perPrefix = login.NewRateLimiter(per, max(int(2*per), 1), 10000, trusted, c)
		a.total = login.NewRateLimiter(perSecond, max(int(perSecond), 1), 1, nil, c)
	} else {
		per = 0
	}
	places := 0
	if inFlight > 0 {
		places = a.perPrefixMax
	}
	a.own = newOwnAnonymous(per, max(int(2*per), 1), places, c)
	return a
}

// WithOwnDials exempts the hub's own dials (OwnDials.Has), by remote
// address. It returns a.
func (a *Anonymous) WithOwnDials(exempt func(remote string) bool) *Anonymous {
	if a != nil {
		a.exempt = exempt
	}
	return a
}

// ownKey is the own address's key in the refusal holds: no prefix.
const ownKey = "own"

// anonymous reports whether r carries no credential.
func (a *Anonymous) anonymous(r *http.Request) bool {
	if r.Header.Get("Authorization") != "" || (r.TLS != nil && len(r.TLS.PeerCertificates) > 0) {
		return false
	}
	if a.session != "" {
		if c, err := r.Cookie(a.session); err == nil && c.Value != "" {
			return false
		}
	}
	return true
}

// self reports whether client, r's client address, is the hub's own
// address (behind a trusted proxy, the client it names).
func self(r *http.Request, client string) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && local != nil && client == login.HostOf(local.String())
}

// WithAnonymousLimit applies the bounds to delegate's credential-less
// requests, answering 429 as a Status negotiated with s.
func (a *Anonymous) WithAnonymousLimit(delegate http.Handler, s runtime.NegotiatedSerializer) http.Handler {
	if a == nil {
		return delegate
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.anonymous(r) {
			delegate.ServeHTTP(w, r)
			return
		}
		if a.exempt != nil && a.exempt(r.RemoteAddr) {
			delegate.ServeHTTP(w, r)
			return
		}
		// An upgrade (an edge agent's pickup, a websocket) becomes a
		// connection for as long as it lives, and the handler returns
		// only then: it takes a token of the rate but no place in flight,
		// which it would hold for its whole life (every live kubectl or
		// SSH session through an edge). The listener bounds connections.
		upgrade := httpstream.IsUpgradeRequest(r)
		client := login.ClientAddress(r, a.trusted)
		if self(r, client) {
			if release, ok := a.own.admit(r.Context(), !upgrade); ok {
				defer release()
				delegate.ServeHTTP(w, r)
				return
			}
			a.refuse(w, r, ownKey, s)
			return
		}
		prefix := login.PrefixOf(client)
		if a.admit(prefix, !upgrade) {
			if !upgrade {
				defer a.done(prefix)
			}
			delegate.ServeHTTP(w, r)
			return
		}
		a.refuse(w, r, prefix, s)
	})
}

// refuse answers 429, held in the tarpit under key.
func (a *Anonymous) refuse(w http.ResponseWriter, r *http.Request, key string, s runtime.NegotiatedSerializer) {
	anonymousRefused.Inc()
	klog.FromContext(r.Context()).V(2).Info("Refusing an anonymous request: too many from this address or in all", "prefix", key, "path", r.URL.Path)
	hangup.UnlessHeld(w.Header(), a.hold.wait(r.Context(), key))
	responsewriters.ErrorNegotiated(apierrors.NewTooManyRequests("too many requests without credentials, retry later", int(RefusalHold.Seconds())),
		s, schema.GroupVersion{}, w, r)
}

// admit takes a token for prefix and, when place, a place in flight.
func (a *Anonymous) admit(prefix string, place bool) bool {
	if place {
		a.mu.Lock()
		if a.inFlight > 0 && (a.running[prefix] >= a.perPrefixMax || a.all >= a.inFlight) {
			a.mu.Unlock()
			return false
		}
		a.running[prefix]++
		a.all++
		a.mu.Unlock()
	}
	if a.perPrefix != nil && !admitQuiet(a.perPrefix, a.total, prefix) {
		if place {
			a.done(prefix)
		}
		return false
	}
	return true
}

func (a *Anonymous) done(prefix string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.running[prefix]--; a.running[prefix] <= 0 {
		delete(a.running, prefix)
	}
	a.all--
}
