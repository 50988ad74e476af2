package fairness

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/utils/clock"
)

var turnsExpired = metrics.NewCounter(&metrics.CounterOpts{Name: "wharf_fairness_cpu_turns_expired_total",
	Help:           "Busy CPU turns given back because their request held them past the longest a turn lasts, waiting on something no turn covers.",
	StabilityLevel: metrics.ALPHA})

func init() {
	legacyregistry.MustRegister(turnsExpired)
}

// HeavyBytes is how many bytes a request moves (body read plus response
// written) before it counts as heavy even though its estimate said
// otherwise: the scale of a seat of a list (estimate.go).
const HeavyBytes = 256 << 10

// DefaultHeavyCPUs is the default of --heavy-request-cpus: every CPU but
// one, at least one.
func DefaultHeavyCPUs() int { return max(1, runtime.GOMAXPROCS(0)-1) }

// Turnstile bounds how many heavy requests of tenants do CPU work at once,
// hub-wide, and deals the turns round-robin among tenants.
//
// Seats bound what a tenant has in flight, not the CPU it burns: a seat
// waiting on etcd costs nothing, one encoding a 30 MB list or decoding a
// 60,000-key body costs a whole core. On two cores, a tenant's share of
// seats held by such requests took both, and another tenant's small
// requests, which never waited for a seat, waited for a CPU instead (the
// bench's B2, B-A to B-C: victim p99 2.4-5×). A heavy request (wider than
// one seat by its estimate, or past HeavyBytes moved) runs only while it
// holds a turn, and gives its turn back whenever it waits on the network
// (each response write, each body read), so a slow reader holds no turn.
// With the default bound, heavy work runs on every CPU but one, and small
// requests, which never take a turn, always have that one.
type Turnstile struct {
	// perTenant bounds the turns one tenant holds at once.
	perTenant int
	// maxHold, when set, ends a turn held that long (hold.expire), on
	// clock.
	maxHold time.Duration
	clock   clock.WithDelayedExecution

	mu   sync.Mutex
	free int
	// held counts each tenant's turns held; waiting holds each tenant's
	// waiters, oldest first; ring is the tenants with waiters, in the
	// order their turns come.
	held    map[string]int
	waiting map[string][]chan struct{}
	ring    []string
}

// NewTurnstile returns a Turnstile of n turns, any number of which one
// tenant may hold; nil when n < 1 (no bound).
func NewTurnstile(n int) *Turnstile { return newTurnstile(n, n) }

// newTurnstile returns a Turnstile of n turns, at most perTenant (at
// least one) of which one tenant holds at once; nil when n < 1.
func newTurnstile(n, perTenant int) *Turnstile {
	if n < 1 {
		return nil
	}
	return &Turnstile{free: n, perTenant: max(1, perTenant), held: map[string]int{}, waiting: map[string][]chan struct{}{}}
}

// expiring makes each turn last at most d, on clock c. It returns t.
func (t *Turnstile) expiring(d time.Duration, c clock.WithDelayedExecution) *Turnstile {
	if t != nil {
		t.maxHold, t.clock = d, c
	}
	return t
}

// acquire waits for a turn for tenant. It reports false, holding nothing,
// when ctx ends first.
func (t *Turnstile) acquire(ctx context.Context, tenant string) bool {
	t.mu.Lock()
	if t.takeLocked(tenant) {
		t.mu.Unlock()
		return true
	}
	ch := make(chan struct{}, 1)
	if len(t.waiting[tenant]) == 0 {
		t.ring = append(t.ring, tenant)
	}
	t.waiting[tenant] = append(t.waiting[tenant], ch)
	// Turns may be free while every waiter's tenant holds its most.
	t.dispatch()
	t.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-ctx.Done():
	}
	t.mu.Lock()
	if t.remove(tenant, ch) {
		t.mu.Unlock()
		return false
	}
	t.mu.Unlock()
	// Granted as ctx ended: pass it on.
	<-ch
	t.release(tenant)
	return false
}

// try takes a turn for tenant only if one is free at once.
func (t *Turnstile) try(tenant string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.takeLocked(tenant)
}

// takeLocked takes a free turn nobody waits for; t.mu is held.
func (t *Turnstile) takeLocked(tenant string) bool {
	if t.free > 0 && len(t.ring) == 0 && t.held[tenant] < t.perTenant {
		t.free--
		t.held[tenant]++
		return true
	}
	return false
}

// remove withdraws ch from tenant's waiters; false when it was granted.
func (t *Turnstile) remove(tenant string, ch chan struct{}) bool {
	q := t.waiting[tenant]
	for i, c := range q {
		if c != ch {
			continue
		}
		q = append(q[:i], q[i+1:]...)
		if len(q) > 0 {
			t.waiting[tenant] = q
			return true
		}
		delete(t.waiting, tenant)
		for j, name := range t.ring {
			if name == tenant {
				t.ring = append(t.ring[:j], t.ring[j+1:]...)
				break
			}
		}
		return true
	}
	return false
}

// release gives tenant's turn back: to the next tenant's oldest waiter,
// or free.
func (t *Turnstile) release(tenant string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held[tenant]--; t.held[tenant] <= 0 {
		delete(t.held, tenant)
	}
	t.free++
	t.dispatch()
}

// dispatch grants free turns to waiters, round-robin, skipping tenants
// that hold their most. t.mu is held.
func (t *Turnstile) dispatch() {
	for t.free > 0 {
		i := slices.IndexFunc(t.ring, func(name string) bool { return t.held[name] < t.perTenant })
		if i < 0 {
			return
		}
		tenant := t.ring[i]
		t.ring = slices.Delete(t.ring, i, i+1)
		q := t.waiting[tenant]
		ch := q[0]
		if len(q) > 1 {
			t.waiting[tenant] = q[1:]
			t.ring = append(t.ring, tenant)
		} else {
			delete(t.waiting, tenant)
		}
		t.free--
		t.held[tenant]++
		ch <- struct{}{}
	}
}

// hold is one request's use of the Turnstile. The handler may write from
// a goroutine of its own (upstream's timeout filter), so mu guards the
// fields below. heavy and held change only under mu, but are read
// without it too: pause and resume run around every write and body read,
// and a request that is not heavy and holds no turn (most) pays no lock.
type hold struct {
	ts     *Turnstile
	ctx    context.Context
	tenant string

	mu    sync.Mutex
	heavy atomic.Bool // takes turns: by its estimate, or once past HeavyBytes
	held  atomic.Bool
	ended bool        // the request's dispatch returned: no more turns
	timer clock.Timer // ends a turn held past ts.maxHold; nil when none
	gen   int         // counts the turns taken, so a late expiry ends no later one
	// heavyTS, set for a busy request, is the turnstile of heavy work it
	// moves to once it has moved HeavyBytes: a busy turn expires after
	// BusyTurnMaxHold, and a 900 kB body's decode of 60,000 keys, far
	// longer, then ran on no turn at all (the noisy bench's B-A: victim
	// p99 8 → 886 ms). Heavy turns do not expire.
	heavyTS *Turnstile
}

func (t *Turnstile) newHold(ctx context.Context, tenant string, heavy bool) *hold {
	if t == nil {
		return nil
	}
	h := &hold{ts: t, ctx: ctx, tenant: tenant}
	h.heavy.Store(heavy)
	return h
}

// take waits for a turn; h.mu is held.
func (h *hold) take() {
	if !h.ts.acquire(h.ctx, h.tenant) {
		return
	}
	h.held.Store(true)
	h.gen++
	if h.ts.maxHold > 0 {
		gen := h.gen
		h.timer = h.ts.clock.AfterFunc(h.ts.maxHold, func() { h.expire(gen) })
	}
}

// giveBack gives the turn back; h.mu is held.
func (h *hold) giveBack() {
	if !h.held.Load() {
		return
	}
	h.held.Store(false)
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
	h.ts.release(h.tenant)
}

// expire gives back a turn held past ts.maxHold: its request is waiting
// on something no turn covers, or is longer than its kind should be. It
// goes on without a turn until it next waits on the network.
func (h *hold) expire(gen int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held.Load() && h.gen == gen {
		turnsExpired.Inc()
		// It fired: nothing to stop (a fake clock runs it inside its
		// own lock, which Stop would take again).
		h.timer = nil
		h.giveBack()
	}
}

// begin takes a turn for a request heavy by its estimate.
func (h *hold) begin() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.heavy.Load() && !h.held.Load() && !h.ended {
		h.take()
	}
}

// end gives the turn back for good.
func (h *hold) end() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ended = true
	h.giveBack()
}

// pause gives the turn back before the request waits on the network.
func (h *hold) pause() {
	if h == nil || !h.held.Load() {
		// Only the request's own writes and reads take a turn after
		// begin (an expiry only gives one back), so a turn not held now
		// is not taken meanwhile.
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.giveBack()
}

// resume takes a turn again after the network, given the bytes the
// request has moved in all: a request becomes heavy past HeavyBytes.
func (h *hold) resume(moved int64) {
	if h == nil || (!h.heavy.Load() && moved < HeavyBytes) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ended || h.held.Load() {
		return
	}
	if moved >= HeavyBytes && h.heavyTS != nil {
		// No turn is held: the next one is of the heavy turnstile.
		h.ts, h.heavyTS = h.heavyTS, nil
	}
	h.heavy.Store(true)
	h.take()
}
