package fairness

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var busyRequests = metrics.NewCounter(&metrics.CounterOpts{Name: "wharf_fairness_busy_requests_total",
	Help:           "Tenants' API requests that ran past their tenant's --tenant-requests-without-turn, in turns of --busy-tenant-cpus.",
	StabilityLevel: metrics.ALPHA})

func init() {
	legacyregistry.MustRegister(busyRequests)
}

// DefaultUnturnedRequests is the default of --tenant-requests-without-turn:
// about a core's worth of one tenant's requests runs without turns.
const DefaultUnturnedRequests = 1

// BusyTurnMaxHold is the longest a busy turn lasts: a small request
// holding one longer is waiting on something no turn covers (a GET of a
// resource version the cache has not reached waits up to 3 s for it), and
// would keep the turn from other tenants meanwhile.
const BusyTurnMaxHold = 250 * time.Millisecond

// DefaultBusyCPUs is the default of --busy-tenant-cpus: every CPU.
func DefaultBusyCPUs() int { return runtime.GOMAXPROCS(0) }

// A seat bounds what a tenant has in flight, not the CPU its requests
// burn (seventh outside review, #1): 40 GETs of a missing ConfigMap at
// once, each one seat and never heavy, all inside one tenant's share of
// 40, kept both cores busy, and another tenant's one request at a time
// waited for a CPU behind them (1,080 → 141 a second). So only the first
// --tenant-requests-without-turn of a tenant's requests running at once
// run freely; each further one is busy work and runs only while it holds
// a turn of a second Turnstile (--busy-tenant-cpus turns hub-wide, dealt
// round-robin among tenants, at most half of them, and at least one, to
// one tenant), giving it back whenever it waits on the network, on a
// provider or on a pacing of its tenant (Aside). A tenant with a request
// or two at a time never waits for a turn; one with forty runs about two
// at a time while another tenant is busy too, and all of them when the
// hub is otherwise idle but for the Go scheduler's share.
//
// unturned counts, per tenant, the requests running without a turn.
type unturned struct {
	n int

	mu sync.Mutex
	m  map[string]int
}

func newUnturned(n int) *unturned { return &unturned{n: n, m: map[string]int{}} }

// enter reports whether a request of tenant about to run may run without
// a turn; if so, leave must be called when it ends.
func (u *unturned) enter(tenant string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m[tenant] >= u.n {
		return false
	}
	u.m[tenant]++
	return true
}

func (u *unturned) leave(tenant string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m[tenant]--; u.m[tenant] <= 0 {
		delete(u.m, tenant)
	}
}

// withTurns wraps a request's execFn so that it does its CPU work in turns:
// a heavy request's in turns of c.cpu, a busy one's (its tenant already
// has its unturned requests running) in turns of c.busy. st.cpu is set as
// it starts, before its handler can write.
func (c *Controller) withTurns(ctx context.Context, st *state, tenant string, heavy bool, execFn func()) func() {
	if c.cpu == nil && c.busy == nil {
		return execFn
	}
	return func() {
		switch {
		case c.busy == nil || c.unturned.enter(tenant):
			if c.busy != nil {
				defer c.unturned.leave(tenant)
			}
			st.cpu = c.cpu.newHold(ctx, tenant, heavy)
		case heavy && c.cpu != nil:
			st.cpu = c.cpu.newHold(ctx, tenant, true)
		default:
			busyRequests.Inc()
			st.cpu = c.busy.newHold(ctx, tenant, true)
			st.cpu.heavyTS = c.cpu
		}
		st.cpu.begin()
		defer st.cpu.end()
		execFn()
	}
}

// Aside gives the CPU turn of ctx's request back while it waits for
// something other than the CPU (a provider's answer, its tenant's write
// rate); the func it returns takes a turn again, if the request takes
// turns, before it goes on.
func Aside(ctx context.Context) (back func()) {
	st, ok := ctx.Value(stateKey{}).(*state)
	if !ok || st.cpu == nil || !st.cpu.held.Load() {
		return func() {}
	}
	st.cpu.pause()
	return func() { st.cpu.resume(st.sent.Load() + st.received.Load()) }
}

// AsideTransport is rt, but a request's CPU turn is given back while it
// waits for the answer's head and for each read of its body (Aside): a
// provider that answers slowly, or streams, holds no turn of the hub's.
func AsideTransport(rt http.RoundTripper) http.RoundTripper { return asideTransport{rt} }

type asideTransport struct{ rt http.RoundTripper }

func (t asideTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	back := Aside(r.Context())
	resp, err := t.rt.RoundTrip(r)
	back()
	// An upgrade's body is its connection (ReverseProxy needs it as an
	// io.ReadWriteCloser); its turn ended with the hijack (upgrade.go).
	if resp != nil && resp.Body != nil && resp.StatusCode != http.StatusSwitchingProtocols {
		resp.Body = &asideBody{ReadCloser: resp.Body, ctx: r.Context()}
	}
	return resp, err
}

type asideBody struct {
	io.ReadCloser
	ctx context.Context
}

func (b *asideBody) Read(p []byte) (int, error) {
	back := Aside(b.ctx)
	defer back()
	return b.ReadCloser.Read(p)
}
