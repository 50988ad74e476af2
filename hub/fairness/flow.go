package fairness

import (
	"container/list"
	"context"
	"hash/fnv"
	"net/http"
	"sync"
	"time"

	flowcontrol "k8s.io/api/flowcontrol/v1"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/server/mux"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	fq "k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/eventclock"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/queueset"
	fcmetrics "k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/wharfhub/wharf/hub/tenantconns"
)

// The classification upstream's filter records (response headers, logs):
// one priority level for tenants, one exempt, configured in code.
var (
	tenantSchema  = &flowcontrol.FlowSchema{}
	tenantLevel   = &flowcontrol.PriorityLevelConfiguration{}
	exemptSchema  = &flowcontrol.FlowSchema{}
	exemptLevel   = &flowcontrol.PriorityLevelConfiguration{}
	queueSetNames = [2]string{"wharf-tenant-readonly", "wharf-tenant-mutating"}
)

func init() {
	tenantSchema.Name, tenantLevel.Name = "wharf-tenant", "wharf-tenant"
	exemptSchema.Name, exemptLevel.Name = "wharf-exempt", "exempt"
}

// Controller is the hub's flow control: upstream's API Priority and
// Fairness filter (k8s.io/apiserver/pkg/server/filters) calls it between
// impersonation and authorization (see the package doc). It implements
// k8s.io/apiserver/pkg/util/flowcontrol.Interface with upstream's fair
// queue sets, two levels deep: each tenant's share is a queue set of its
// own, and the hub-wide budget is one queue set with the tenant as the
// flow.
type Controller struct {
	keyer     Keyer
	limits    Limits
	queueLen  int
	factory   fq.QueueSetFactory
	hub       [2]fq.QueueSet
	estimator *Estimator
	watches   *Watches
	queueWait time.Duration
	waitClock clock.WithDelayedExecution
	tarpit    *tarpit
	denials   *denials
	traffic   *traffic
	cpu       *Turnstile
	// busy deals the turns of requests past their tenant's unturned
	// ones (busy.go); nil: they run freely.
	busy     *Turnstile
	unturned *unturned
	stored   StoredSizes
	// delegations: relayed requests' seats, lent to their providers'
	// calls back (delegation.go).
	delegations *delegations

	mu      sync.Mutex
	tenants map[tenantKind]*tenantQueue
	idle    idleQueues // those of tenants with nothing in flight (idle.go)
}

type tenantKind struct {
	tenant string
	kind   Kind
}

type tenantQueue struct {
	qs   fq.QueueSet
	refs int
	key  tenantKind
	idle *list.Element // in Controller.idle while refs is 0
}

var _ utilflowcontrol.Interface = (*Controller)(nil)

// ControllerConfig configures a Controller.
type ControllerConfig struct {
	Keyer  Keyer
	Limits Limits
	// QueueLength is how many requests of one tenant may wait, per kind
	// (and in each hub-wide queue); 0 refuses at once what is over.
	QueueLength int
	// HubQueues is the number of queues of the hub-wide queue sets.
	HubQueues int
	Estimator *Estimator
	Watches   *Watches
	// QueueWait is the longest a request waits before it is dispatched,
	// counted from its arrival and across both queue levels, before 429;
	// 0 leaves upstream's (a quarter of the request timeout).
	QueueWait time.Duration
	// Clock drives the queue sets; eventclock.Real{} outside tests.
	Clock eventclock.Interface
	// WaitClock measures QueueWait; nil is the real clock.
	WaitClock clock.WithDelayedExecution
	// RefusalHold is how long after its arrival a request refused at
	// once is answered (tarpit.go); 0 answers at once.
	RefusalHold time.Duration
	// DenialRate and DenialBurst pace each tenant's 403 answers, each
	// waiting at most DenialHold (denials.go); a zero rate does not pace.
	DenialRate  float64
	DenialBurst int
	DenialHold  time.Duration
	// TrafficRate is the bytes a second each tenant may move, request
	// bodies and responses, after TrafficBurst (traffic.go); 0: no
	// bound.
	TrafficRate  float64
	TrafficBurst int64
	// HeavyCPUs bounds how many heavy requests do CPU work at once,
	// hub-wide (cpu.go); 0: no bound.
	HeavyCPUs int
	// BusyCPUs bounds how many requests of tenants past their
	// UnturnedRequests run at once, hub-wide (busy.go); 0: no bound.
	BusyCPUs         int
	UnturnedRequests int
	// Stored weighs requests naming a big stored object by its size
	// (stored.go); nil weighs them by their body alone.
	Stored StoredSizes
}

// maxHeld bounds the refused requests held hub-wide (tarpit.go).
const maxHeld = 4096

// NewController returns a Controller with nothing in flight.
func NewController(cfg ControllerConfig) (*Controller, error) {
	c := &Controller{
		keyer: cfg.Keyer, limits: cfg.Limits, queueLen: max(0, cfg.QueueLength),
		factory: queueset.NewQueueSetFactory(cfg.Clock), estimator: cfg.Estimator, watches: cfg.Watches, queueWait: cfg.QueueWait,
		tenants: map[tenantKind]*tenantQueue{}, waitClock: cfg.WaitClock, stored: cfg.Stored,
		delegations: &delegations{},
	}
	if c.waitClock == nil {
		c.waitClock = clock.RealClock{}
	}
	if cfg.DenialRate > 0 && cfg.DenialHold > 0 {
		c.denials = newDenials(c.waitClock, cfg.DenialRate, max(1, cfg.DenialBurst), cfg.DenialHold)
	}
	c.traffic = newTraffic(c.waitClock, cfg.TrafficRate, cfg.TrafficBurst, c.queueLen)
	c.cpu = NewTurnstile(cfg.HeavyCPUs)
	if c.busy = newTurnstile(cfg.BusyCPUs, cfg.BusyCPUs/2).expiring(BusyTurnMaxHold, c.waitClock); c.busy != nil {
		c.unturned = newUnturned(max(0, cfg.UnturnedRequests))
	}
	if cfg.RefusalHold > 0 {
		// A tenant may hold as many refusals as it may have requests
		// running and queued: what its connections carry anyway.
		per := int(c.tenantSeats(ReadOnly)+c.tenantSeats(Mutating)) + 2*c.queueLen
		c.tarpit = newTarpit(c.waitClock, cfg.RefusalHold, per, maxHeld)
	}
	for k, total := range [2]int{cfg.Limits.ReadOnly, cfg.Limits.Mutating} {
		qs, err := c.newQueueSet("wharf-hub-"+[2]string{"readonly", "mutating"}[k], max(1, cfg.HubQueues), c.queueLen, total)
		if err != nil {
			return nil, err
		}
		c.hub[k] = qs
	}
	return c, nil
}

// noLimit stands for a budget of 0 (no limit) in a queue set.
const noLimit = 1 << 30

func (c *Controller) newQueueSet(name string, queues, queueLen, limit int) (fq.QueueSet, error) {
	if limit <= 0 {
		limit = noLimit
	}
	if queueLen <= 0 {
		// No queue: over the limit is refused at once (upstream's
		// DesiredNumQueues 0).
		queues = 0
	}
	// Per-tenant queue sets are many (one per active tenant, plus a
	// bounded list of idle ones, idle.go): their gauges are no-ops, so
	// that no metric carries a tenant's name.
	qsc, err := c.factory.BeginConstruction(fq.QueuingConfig{Name: name, DesiredNumQueues: queues, QueueLengthLimit: queueLen, HandSize: 1},
		noopPair, noopGauge{}, noopGauge{})
	if err != nil {
		return nil, err
	}
	return qsc.Complete(fq.DispatchingConfig{ConcurrencyLimit: limit, ConcurrencyDenominator: limit}), nil
}

// Handle classifies, estimates, queues and runs one request (see
// utilflowcontrol.Interface): execFn runs once or, when the request is
// refused, not at all and upstream's filter answers 429.
func (c *Controller) Handle(ctx context.Context, digest utilflowcontrol.RequestDigest,
	noteFn func(*flowcontrol.FlowSchema, *flowcontrol.PriorityLevelConfiguration, string),
	_ func() fcrequest.WorkEstimate, queueNoteFn fq.QueueNoteFn, execFn func()) {
	info := digest.RequestInfo
	st := stateFrom(ctx)
	isWatch := info.Verb == "watch"
	if isProbe(info) {
		// Never counted, but a credential on a probe makes its
		// connection its tenant's all the same: otherwise connections
		// parked behind GET /readyz with a token escaped the per-tenant
		// bound (eighth outside review, C1).
		if tenantconns.Unattributed(ctx) {
			if tenant, exempt := c.keyer.Tenant(ctx, digest.User); !exempt && !sharedTenant(tenant) {
				tenantconns.Attribute(ctx, tenant)
			}
		}
		noteFn(exemptSchema, exemptLevel, "")
		execFn()
		return
	}
	// A request its client cancelled already (an HTTP/2 stream reset,
	// whose handler the timeout filter leaves running) takes no lock and
	// no seat: in a rapid reset, some 700 of them queued on the traffic
	// budget's lock and every tenant waited behind them (fifth review,
	// #20, hub/rapidreset).
	if ctx.Err() != nil {
		// Classified all the same: upstream's filter reads the
		// classification of every request it was not let run.
		noteFn(tenantSchema, tenantLevel, "")
		return
	}
	// A refusal is held on the request's own context (tarpit.go), not
	// on the wait deadline below.
	reqCtx := ctx
	// One deadline from the request's arrival bounds everything before
	// dispatch: naming its tenant (an etcd read for a confined identity
	// whose workspace is not in memory) and both queue levels.
	ctx, stop := c.waitContext(ctx)
	defer stop()
	tenant, exempt := c.keyer.Tenant(ctx, digest.User)
	if exempt {
		noteFn(exemptSchema, exemptLevel, "")
		if isWatch && c.watches != nil {
			// Counted hub-wide (file descriptors), never refused.
			st.watchRelease = c.watches.admit("", true)
		}
		execFn()
		c.forgetUnstarted(st)
		return
	}
	noteFn(tenantSchema, tenantLevel, tenant)
	st.tenant = tenant
	// Its connection is its tenant's from its first counted request,
	// and bounded per tenant (hub/tenantconns); not for a tenant that
	// many unrelated callers share, who would close each other's.
	if !sharedTenant(tenant) {
		tenantconns.Attribute(ctx, tenant)
	}
	// Set before the request may run: an upgrade is charged from its
	// hijack on, whether or not its traffic admission comes after
	// (upgrade.go).
	st.upgrade = c.traffic
	if c.denials != nil {
		st.forbidden = func() { c.denials.wait(reqCtx, tenant) }
	}
	if isWatch && c.watches != nil {
		release := c.watches.admit(tenant, false)
		if release == nil {
			klog.V(3).InfoS("Watch over its tenant's cap or the hub's", "tenant", tenant, "path", info.Path)
			// Its head and its selector's parses were spent.
			c.traffic.spend(tenant, st.head+int64(selectorTerms(info, st.rawQuery))*SelectorTermBytes)
			st.noteHeld(c.tarpit.wait(reqCtx, tenant))
			st.refuse(info)
			return
		}
		st.watchRelease = release
	}
	kind := Mutating
	if readOnlyVerbs.Has(info.Verb) {
		kind = ReadOnly
	}
	// Width follows cost (issue 24 B3, second review B-A to B-C): a
	// write by its body's size (writes.go), a list or a large API
	// document by the size its caller's last one had (estimate.go).
	width := fcrequest.WorkEstimate{InitialSeats: 1}
	switch {
	case kind == Mutating:
		width.InitialSeats = writeSeats(st.contentLength, c.tenantSeats(kind), c.maxSeats(kind))
	case c.estimator != nil:
		width.InitialSeats = c.estimator.Seats(ctx, info, st.rawQuery, c.tenantSeats(kind), c.maxSeats(kind))
	}
	// A list or watch is at least as wide as its selector is long
	// (selector.go; fifth review, #16-#18).
	terms := selectorTerms(info, st.rawQuery)
	if kind == ReadOnly {
		width.InitialSeats = max(width.InitialSeats, selectorSeats(terms, c.maxSeats(kind)))
	}
	// A request naming a big stored object costs what the object does,
	// whatever its body (third review, C-B: 34-byte patches and GETs of
	// a 960 KB object took one seat each).
	width.InitialSeats = max(width.InitialSeats, c.storedSeats(ctx, tenant, info, kind))
	if kind == Mutating {
		width = withLifecycle(width, info, c.tenantSeats(kind))
	}
	requestSeats.WithLabelValues(kind.label()).Observe(float64(width.InitialSeats))
	if c.keyer.Prepare != nil {
		c.keyer.Prepare(ctx)
	}
	if tenant == Unconfined && ctx.Err() != nil {
		// Its workspace could not be read in time: refused, rather than
		// charged to the tenant of the denied.
		st.refuse(info)
		c.forgetUnstarted(st)
		return
	}
	// A tenant that moved more bytes than its budget waits before its
	// seats, within the same queue wait (traffic.go).
	// Admitted only while its bucket covers what its requests in flight
	// are expected to move (their learned sizes); its bytes are then
	// charged as they move (traffic.go).
	// Its head and its selector's parses are spent already: charged
	// whether it is then served or refused (selector.go).
	spent := st.head + int64(terms)*SelectorTermBytes
	if st.delegation != "" && !isWatch {
		// A provider's call back for a relayed request of this tenant
		// that holds its seats: served on them (delegation.go).
		if leave, ok := c.delegations.enter(st.delegation, tenant); ok {
			defer leave()
			c.runDelegated(reqCtx, st, tenant, spent, width.InitialSeats > 1, execFn)
			return
		}
	}
	m, ok := c.traffic.admit(ctx, c.waitDeadline(reqCtx), tenant, spent+c.expectedBytes(ctx, info, st, kind))
	m.take(spent, false)
	if !ok {
		c.traffic.spend(tenant, spent)
		klog.V(3).InfoS("Request over its tenant's traffic budget", "tenant", tenant, "path", info.Path)
		st.noteHeld(c.tarpit.wait(reqCtx, tenant))
		st.refuse(info)
		c.forgetUnstarted(st)
		return
	}
	st.watch = isWatch
	st.meter.Store(m)
	// A heavy request does its CPU work in turns (cpu.go); a watch's
	// events are bounded by its tenant's watch cap and traffic instead.
	// So does a busy one, past its tenant's unturned requests (busy.go).
	exec := execFn
	if !isWatch {
		exec = c.withTurns(reqCtx, st, tenant, width.InitialSeats > 1, execFn)
	}
	// While it holds seats, a relay to a provider may lend them to the
	// provider's calls back (Relayed).
	st.delegations = c.delegations
	served := c.run(ctx, tenant, kind, width, queueNoteFn, exec)
	st.returnSeats()
	if !served {
		klog.V(3).InfoS("Request over its tenant's share or the hub's budget", "tenant", tenant, "mutating", kind == Mutating, "seats", width.InitialSeats, "path", info.Path)
		st.meter.Store(nil)
		st.noteHeld(c.tarpit.wait(reqCtx, tenant))
		st.refuse(info)
	}
	// Done, or for a watch started: what it sends from now on is charged
	// as it goes, and no longer counted in flight.
	m.close()
	c.forgetUnstarted(st)
}

// expectedBytes is what a request is expected to move: the body it
// announces and, for a read, the size its caller's last answer had, or
// the whole burst while that is not known: otherwise a flood of first
// lists would all be admitted at once, before any was charged, and wait
// for their seats already past the budget (C-H).
func (c *Controller) expectedBytes(ctx context.Context, info *request.RequestInfo, st *state, k Kind) int64 {
	if c.traffic == nil {
		return 0
	}
	n := max(st.contentLength, 0)
	if k == ReadOnly {
		n += c.estimator.Bytes(ctx, info, st.rawQuery, int64(c.traffic.burst))
	}
	return n
}

// waitDeadline is when the request's queue wait ends (waitContext);
// zero when there is no bound.
func (c *Controller) waitDeadline(ctx context.Context) time.Time {
	if c.queueWait <= 0 {
		return time.Time{}
	}
	return arrival(ctx, c.waitClock).Add(c.queueWait)
}

// waitContext returns ctx ended QueueWait after the request arrived
// (upstream's received timestamp, else now), on the wait clock. Measured
// from arrival, not from here: time spent before the queues (the
// connection, authentication, impersonation, naming the tenant) is time
// the caller waited too (outside attack review, row 36). Both queue
// levels share it, so a request waits at most QueueWait in all before it
// is dispatched or refused; one that arrives here late is still
// dispatched if a seat is free at once.
func (c *Controller) waitContext(ctx context.Context) (context.Context, func()) {
	if c.queueWait <= 0 {
		return ctx, func() {}
	}
	now := c.waitClock.Now()
	arrived := arrival(ctx, c.waitClock)
	wctx, cancel := context.WithCancel(ctx)
	left := arrived.Add(c.queueWait).Sub(now)
	if left <= 0 {
		cancel()
		return wctx, cancel
	}
	t := c.waitClock.AfterFunc(left, cancel)
	return wctx, func() {
		t.Stop()
		cancel()
	}
}

// forgetUnstarted ends the count of a watch that never started: upstream
// calls RegisterWatch only once it runs.
func (c *Controller) forgetUnstarted(st *state) {
	if st.watchRelease != nil && !st.watchRegistered {
		st.watchRelease()
		st.watchRelease = nil
	}
}

// tenantSeats is a tenant's whole share of the kind: the width of a list
// whose size is not known yet.
func (c *Controller) tenantSeats(k Kind) uint64 {
	_, share := c.limits.bounds(k)
	if share <= 0 {
		return maxListSeats
	}
	return uint64(share)
}

// maxListSeats is upstream's largest list width
// (flowcontrol/request.DefaultWorkEstimatorConfig with size-based
// estimates).
const maxListSeats = 100

// maxSeats bounds one request's width: a quarter of the hub-wide budget,
// and at least a tenant's share. A list wider than its tenant's share runs
// only while nothing else of that tenant does (upstream's queue sets);
// hub-wide, at most four such lists are encoded at once, whatever the
// number of tenants: the hub's CPU, not only each tenant's share, is what
// 38 lists of 30 MB used up (B2).
func (c *Controller) maxSeats(k Kind) uint64 {
	total, _ := c.limits.bounds(k)
	if total <= 0 {
		return max(maxListSeats, c.tenantSeats(k))
	}
	return max(uint64(total/4), c.tenantSeats(k), 1)
}

// run takes width seats of tenant's share, then of the hub's budget, each
// after a fair wait, and runs exec; it reports whether exec ran.
func (c *Controller) run(ctx context.Context, tenant string, k Kind, width fcrequest.WorkEstimate, queueNoteFn fq.QueueNoteFn, exec func()) bool {
	tq, err := c.acquire(tenant, k)
	if err != nil {
		klog.ErrorS(err, "Cannot build a tenant queue set")
		return false
	}
	defer c.release(tenant, k)
	hash := hashOf(tenant)
	req, _ := tq.qs.StartRequest(ctx, &width, hash, tenant, queueSetNames[k], tenant, nil, queueNoteFn)
	if req == nil {
		return false
	}
	served := false
	req.Finish(func() {
		hw := hubWidth(width)
		hreq, _ := c.hub[k].StartRequest(ctx, &hw, hash, tenant, queueSetNames[k], tenant, nil, queueNoteFn)
		if hreq == nil {
			return
		}
		hreq.Finish(func() {
			served = true
			exec()
		})
	})
	return served
}

func (c *Controller) acquire(tenant string, k Kind) (*tenantQueue, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := tenantKind{tenant, k}
	tq := c.tenants[key]
	if tq == nil {
		_, share := c.limits.bounds(k)
		qs, err := c.newQueueSet(queueSetNames[k], 1, c.queueLen, share)
		if err != nil {
			return nil, err
		}
		tq = &tenantQueue{qs: qs}
		c.tenants[key] = tq
	}
	c.idle.take(tq)
	tq.refs++
	return tq, nil
}

// release keeps a tenant's queue set for reuse once no request of it is
// queued or running, among a bounded number of idle ones (idle.go), so
// memory is bounded by the requests in flight plus that bound.
func (c *Controller) release(tenant string, k Kind) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := tenantKind{tenant, k}
	if tq := c.tenants[key]; tq != nil {
		if tq.refs--; tq.refs <= 0 {
			c.idle.add(key, tq, c.tenants)
		}
	}
}

// Waiting reports how many requests wait in the tenants' queues and in
// the hub-wide ones (for tests, and to tell where requests wait).
func (c *Controller) Waiting() (tenants, hub int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tq := range c.tenants {
		tenants += tq.qs.Dump(false).Waiting
	}
	for _, qs := range c.hub {
		hub += qs.Dump(false).Waiting
	}
	return tenants, hub
}

func hashOf(s string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	return h.Sum64()
}

// Run has nothing to watch: the configuration is in code.
func (c *Controller) Run(stopCh <-chan struct{}) error {
	<-stopCh
	return nil
}

// Install adds no debug endpoints: upstream's would show every tenant's
// queues to whoever may read /debug.
func (c *Controller) Install(*mux.PathRecorderMux) {}

// RegisterWatch is called by upstream's filter once a watch admitted by
// Handle starts; the returned func ends its count when the watch ends.
func (c *Controller) RegisterWatch(r *http.Request) utilflowcontrol.ForgetWatchFunc {
	st := stateFrom(r.Context())
	release := st.watchRelease
	st.watchRegistered = true
	if release == nil {
		return func() {}
	}
	return release
}

// GetInterestedWatchCount is used by upstream's mutating estimate, which
// the hub does not use.
func (c *Controller) GetInterestedWatchCount(*request.RequestInfo) int { return 0 }

// GetMaxSeats is upstream's bound on one request's width.
func (c *Controller) GetMaxSeats(string) uint64 { return c.maxSeats(ReadOnly) }

// SetMaxSeats is part of upstream's interface; the bound is in code.
func (c *Controller) SetMaxSeats(string, uint64) {}

// ForgetPriorityLevel is part of upstream's interface.
func (c *Controller) ForgetPriorityLevel(string) {}

type noopGauge struct{}

func (noopGauge) Set(float64)            {}
func (noopGauge) Inc()                   {}
func (noopGauge) Dec()                   {}
func (noopGauge) Add(float64)            {}
func (noopGauge) SetToCurrentTime()      {}
func (noopGauge) SetDenominator(float64) {}

var noopPair = fcmetrics.RatioedGaugePair{RequestsWaiting: noopGauge{}, RequestsExecuting: noopGauge{}}
