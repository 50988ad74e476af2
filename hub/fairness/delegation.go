package fairness

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// HeaderDelegation carries a delegation: the hub sends it with a request
// it relays to a provider (an APIService routed there), and the provider
// sends it back with the requests it makes to the hub to serve that one
// (the resource proxy reading its workspace target). The provider SDK
// names the same header (sdk.HeaderDelegation; it cannot import the hub).
const HeaderDelegation = "X-Wharf-Delegation"

// delegations are the relayed requests in flight that hold their seats
// (sixth outside review, W10). A relayed request holds seats of its
// tenant's share, and of the hub's budget, while the provider serves it;
// the provider's request back to the hub is made as the client workspace
// (wharf:workspace:<path>), so of the same tenant, and waited for seats
// behind the very request it served. A first list through a
// ResourceProxy (its size unknown: the tenant's whole share) waited the
// queue wait and got 429, every time. Upstream keeps an aggregated
// server's calls back out of the caller's priority level; here the call
// back is served on the seats of the request it serves instead: it is
// the same work, counted once. It stays its tenant's: the tenant must be
// the relayed request's, one call back runs at a time, only while the
// relayed request holds its seats, its bytes are charged to the tenant's
// traffic budget as they move, and its CPU-heavy work takes turns.
type delegations struct {
	mu sync.Mutex
	m  map[string]*delegation
}

type delegation struct {
	tenant string
	busy   bool
}

var delegatedRequests = metrics.NewCounterVec(&metrics.CounterOpts{Name: "wharf_fairness_delegated_requests_total",
	Help:           "Requests a provider made back to the hub with a delegation of a relayed request: served on its seats (admitted), or admitted as any other (ignored: unknown, ended, another tenant's, or one already running).",
	StabilityLevel: metrics.ALPHA}, []string{"result"})

func init() {
	legacyregistry.MustRegister(delegatedRequests)
}

// open registers a delegation for tenant and returns its token, and the
// func that ends it.
func (d *delegations) open(tenant string) (string, func()) {
	b := make([]byte, 18)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	tok := base64.RawURLEncoding.EncodeToString(b)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[string]*delegation{}
	}
	d.m[tok] = &delegation{tenant: tenant}
	return tok, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		delete(d.m, tok)
	}
}

// enter reports whether a request of tenant bearing tok may run on the
// seats of the relayed request tok was opened for; leave must then be
// called when it is done.
func (d *delegations) enter(tok, tenant string) (leave func(), ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.m[tok]
	if e == nil || e.tenant != tenant || e.busy {
		delegatedRequests.WithLabelValues("ignored").Inc()
		return nil, false
	}
	e.busy = true
	delegatedRequests.WithLabelValues("admitted").Inc()
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		e.busy = false
	}, true
}

// Relayed is called when the hub relays a request to a provider (an
// APIService routed there). The request ends its CPU turns for good: the
// hub only relays it, waiting on another process between its writes, and
// that process may call the hub back as the same tenant (the resource
// proxy reads its target workspace), whose heavy request would then wait
// for the very turn the relay holds. And, when the request holds seats
// of its tenant's share while relayed (not a watch, whose seats are given
// back when it is delegated, and no administrator's), it gets a
// delegation for the provider's calls back (HeaderDelegation; see
// delegations): tok is "" when there is none. done ends it; call it when
// the relay ends.
func Relayed(ctx context.Context) (tok string, done func()) {
	st, ok := ctx.Value(stateKey{}).(*state)
	if !ok {
		return "", func() {}
	}
	st.cpu.end()
	if st.delegations == nil || st.tenant == "" || st.watch {
		return "", func() {}
	}
	st.delegationMu.Lock()
	defer st.delegationMu.Unlock()
	if st.seatsReturned {
		return "", func() {}
	}
	tok, done = st.delegations.open(st.tenant)
	st.delegated = append(st.delegated, done)
	return tok, done
}

// returnSeats ends the request's delegations: its seats are given back.
func (st *state) returnSeats() {
	st.delegationMu.Lock()
	defer st.delegationMu.Unlock()
	st.seatsReturned = true
	for _, done := range st.delegated {
		done()
	}
	st.delegated = nil
}

// runDelegated serves a call back on its relayed request's seats (see
// delegations): no seats and no wait for the traffic budget, whose bytes
// are charged as they move all the same; heavy work takes CPU turns.
func (c *Controller) runDelegated(reqCtx context.Context, st *state, tenant string, spent int64, heavy bool, execFn func()) {
	m := c.traffic.meterOf(tenant)
	m.take(spent, false)
	st.meter.Store(m)
	exec := execFn
	if h := c.cpu.newHold(reqCtx, tenant, heavy); h != nil {
		st.cpu = h
		exec = func() {
			h.begin()
			defer h.end()
			execFn()
		}
	}
	exec()
	m.close()
}
