package fairness

import (
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/eventclock"
)

// Options are the in-flight budgets' flags. The first two are
// kube-apiserver's, with its defaults.
type Options struct {
	MaxRequestsInFlight         int
	MaxMutatingRequestsInFlight int
	// TenantFraction is each tenant's share of each budget.
	TenantFraction float64
	// MaxWatchesPerTenant bounds each tenant's open watches.
	MaxWatchesPerTenant int
	// MaxWatches bounds open watches hub-wide; 0 means half the
	// process's open-file limit.
	MaxWatches int
	// TrafficBytesPerCPU is each tenant's budget of bytes moved a
	// second per CPU (GOMAXPROCS), after TrafficBurst; 0: no bound.
	TrafficBytesPerCPU int64
	TrafficBurst       int64
	// HeavyCPUs bounds how many tenants' heavy requests do CPU work at
	// once (cpu.go); 0: no bound.
	HeavyCPUs int
	// BusyCPUs bounds how many of tenants' requests past their
	// UnturnedRequests run at once (busy.go); 0: no bound.
	BusyCPUs         int
	UnturnedRequests int
	// MaxConnections bounds the connections the listener holds open;
	// 0 means three quarters of the open-file limit.
	MaxConnections int
	// MaxConnectionsPerAddress bounds them per client address; 0: none.
	MaxConnectionsPerAddress int
	// MaxConnectionsPerTenant bounds the connections of one tenant
	// (hub/tenantconns); 0: none.
	MaxConnectionsPerTenant int
	// TLSHandshakesPerSecond bounds new TLS handshakes (conns.go); 0: none.
	TLSHandshakesPerSecond float64
	// AnonymousRequestsPerSecond and AnonymousRequestsInFlight bound the
	// requests without credentials (anonymous.go); 0: none.
	AnonymousRequestsPerSecond float64
	AnonymousRequestsInFlight  int
}

// NewOptions returns kube-apiserver's budgets and a tenth of each per
// tenant: ten tenants at their limit still leave the hub nothing to spare,
// but one alone leaves 90% to everybody else.
func NewOptions() *Options {
	return &Options{MaxRequestsInFlight: 400, MaxMutatingRequestsInFlight: 200, TenantFraction: 0.1, MaxWatchesPerTenant: 500,
		TrafficBytesPerCPU: TrafficBytesPerCPU, TrafficBurst: TrafficBurst, HeavyCPUs: DefaultHeavyCPUs(), MaxConnectionsPerAddress: 1000, MaxConnectionsPerTenant: 1000,
		BusyCPUs: DefaultBusyCPUs(), UnturnedRequests: DefaultUnturnedRequests,
		TLSHandshakesPerSecond: 200, AnonymousRequestsPerSecond: 200, AnonymousRequestsInFlight: 32}
}

// AddFlags registers the flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.MaxRequestsInFlight, "max-requests-inflight", o.MaxRequestsInFlight,
		"Most non-mutating requests in flight at once, hub-wide (long-running ones not counted). 0 means no limit.")
	fs.IntVar(&o.MaxMutatingRequestsInFlight, "max-mutating-requests-inflight", o.MaxMutatingRequestsInFlight,
		"Most mutating requests in flight at once, hub-wide (long-running ones not counted). 0 means no limit.")
	fs.Float64Var(&o.TenantFraction, "max-requests-inflight-tenant-fraction", o.TenantFraction,
		"Share of each in-flight budget one tenant (a person's home tree, or a top-level workspace tree) may use, in (0,1]. "+
			"Also bounds each tenant's concurrent provider-route requests. Hub administrators are not limited.")
	fs.IntVar(&o.MaxWatchesPerTenant, "max-watches-per-tenant", o.MaxWatchesPerTenant,
		"Most watches one tenant may have open at once; over it a watch gets 429 with Retry-After. "+
			"Never more than --max-requests-inflight-tenant-fraction of --max-watches. 0 means no limit. Hub administrators are not limited.")
	fs.IntVar(&o.MaxWatches, "max-watches", o.MaxWatches,
		"Most watches tenants may have open at once, hub-wide (each may hold a file descriptor). "+
			"0 means half the open-file limit (RLIMIT_NOFILE) the hub runs with. Hub administrators' watches count but are never refused.")
	fs.Int64Var(&o.TrafficBytesPerCPU, "tenant-traffic-bytes-per-cpu", o.TrafficBytesPerCPU,
		"Bytes a second one tenant's API requests may move (request bodies and responses), per CPU the hub runs on (GOMAXPROCS), "+
			"after --tenant-traffic-burst-bytes. A tenant over it waits before its next requests, within the queue wait, then gets 429. 0 means no bound. Hub administrators are not limited.")
	fs.Int64Var(&o.TrafficBurst, "tenant-traffic-burst-bytes", o.TrafficBurst,
		"Bytes one tenant's API requests may move at once before --tenant-traffic-bytes-per-cpu applies; also the most a tenant can be in debt.")
	fs.IntVar(&o.HeavyCPUs, "heavy-request-cpus", o.HeavyCPUs,
		"Most heavy API requests of tenants (wider than one seat, or past 256 KiB of body and response) doing CPU work at once, hub-wide, "+
			"dealt round-robin among tenants; a request gives its turn back while it waits on the network. "+
			"The default is every CPU but one (GOMAXPROCS-1, at least 1), so small requests always have a CPU. 0 means no bound. Hub administrators are not limited.")
	fs.IntVar(&o.UnturnedRequests, "tenant-requests-without-turn", o.UnturnedRequests,
		"Requests of one tenant that run at once without a CPU turn; each further one runs in turns of --busy-tenant-cpus, "+
			"so that many small requests of one tenant do not take every CPU from the others.")
	fs.IntVar(&o.BusyCPUs, "busy-tenant-cpus", o.BusyCPUs,
		"Most API requests of tenants past --tenant-requests-without-turn doing CPU work at once, hub-wide, dealt round-robin among tenants, "+
			"at most half of them (at least one) to one tenant; a request gives its turn back while it waits on the network, a provider or its tenant's pacing. "+
			"The default is the number of CPUs (GOMAXPROCS). 0 means no bound. Hub administrators are not limited.")
	fs.IntVar(&o.MaxConnections, "max-connections", o.MaxConnections,
		"Most client connections the hub holds open at once; past it a new one takes the place of one the hub never answered (no TLS handshake began), else of the one silent longest. "+
			"0 means three quarters of the open-file limit (RLIMIT_NOFILE), so that descriptors stay for etcd, plugins and files.")
	fs.IntVar(&o.MaxConnectionsPerAddress, "max-connections-per-address", o.MaxConnectionsPerAddress,
		"Most connections one client address may hold open; past it a new one is closed at once. 0 means no bound.")
	fs.IntVar(&o.MaxConnectionsPerTenant, "max-connections-per-tenant", o.MaxConnectionsPerTenant,
		"Most client connections one tenant may hold open, from any addresses; a connection is the tenant's of its first counted request. "+
			"Past it the tenant's connection silent longest is closed (or, when all carry requests, the newest once its requests end). "+
			"Never more than --max-requests-inflight-tenant-fraction of --max-connections. 0 means no bound. Hub administrators' and the hub's own are not counted.")
	fs.Float64Var(&o.TLSHandshakesPerSecond, "max-tls-handshakes-per-second", o.TLSHandshakesPerSecond,
		"New TLS handshakes per second the hub begins, and a fifth of it per client address prefix (IPv4 /24, IPv6 /64); a connection over it is closed before its handshake. "+
			"Past the hub-wide rate a prefix that was quiet still gets one. Connections from the hub's own address are outside it: at most half the CPUs (at least one) compute their handshakes at once, "+
			"the others waiting in turn up to 5s before they are closed; the hub's in-process loopback client is not counted. 0 means no bound, for both.")
	fs.Float64Var(&o.AnonymousRequestsPerSecond, "max-anonymous-requests-per-second", o.AnonymousRequestsPerSecond,
		"Requests without credentials (no token, session cookie or client certificate) per second, and a fifth of it per client address prefix; over it they get 429. "+
			"The hub's own address has a fifth of its own, past which a request waits up to 2s before its 429; the hub's in-process client is not counted. 0 means no bound.")
	fs.IntVar(&o.AnonymousRequestsInFlight, "max-anonymous-requests-inflight", o.AnonymousRequestsInFlight,
		"Requests without credentials in flight at once, and a quarter of it per client address prefix (the hub's own address: a quarter of its own); over it they get 429. 0 means no bound.")
}

// ListenerLimits returns the listener's bounds for an open-file limit of
// nofile (0: unknown).
func (o *Options) ListenerLimits(nofile uint64) ConnLimits {
	total, perAddr := o.ConnectionLimits(nofile)
	lim := ConnLimits{Total: total, PerAddress: perAddr, HandshakesPerSecond: o.TLSHandshakesPerSecond}
	if o.TLSHandshakesPerSecond > 0 {
		lim.OwnHandshakeCPUs = DefaultOwnHandshakeCPUs()
	}
	return lim
}

// ConnectionLimits returns the listener's bounds for an open-file limit
// of nofile (0: unknown).
func (o *Options) ConnectionLimits(nofile uint64) (total, perAddr int) {
	total = o.MaxConnections
	if total == 0 && nofile > 0 {
		total = int(min(nofile/4*3, math.MaxInt32))
	}
	return total, o.MaxConnectionsPerAddress
}

// TenantConnections is each tenant's bound on open connections for an
// open-file limit of nofile: --max-connections-per-tenant, at most the
// tenant fraction of --max-connections (at least one); 0: no bound.
func (o *Options) TenantConnections(nofile uint64) int {
	n := o.MaxConnectionsPerTenant
	if total, _ := o.ConnectionLimits(nofile); n > 0 && total > 0 {
		n = min(n, max(1, int(o.TenantFraction*float64(total))))
	}
	return n
}

// Validate reports every invalid option.
func (o *Options) Validate() []error {
	var errs []error
	if o.MaxRequestsInFlight < 0 {
		errs = append(errs, fmt.Errorf("--max-requests-inflight must not be negative"))
	}
	if o.MaxMutatingRequestsInFlight < 0 {
		errs = append(errs, fmt.Errorf("--max-mutating-requests-inflight must not be negative"))
	}
	if o.MaxWatchesPerTenant < 0 {
		errs = append(errs, fmt.Errorf("--max-watches-per-tenant must not be negative"))
	}
	if o.HeavyCPUs < 0 {
		errs = append(errs, fmt.Errorf("--heavy-request-cpus must not be negative"))
	}
	if o.BusyCPUs < 0 || o.UnturnedRequests < 0 {
		errs = append(errs, fmt.Errorf("--busy-tenant-cpus and --tenant-requests-without-turn must not be negative"))
	}
	if o.TLSHandshakesPerSecond < 0 || o.AnonymousRequestsPerSecond < 0 || o.AnonymousRequestsInFlight < 0 {
		errs = append(errs, fmt.Errorf("--max-tls-handshakes-per-second, --max-anonymous-requests-per-second and --max-anonymous-requests-inflight must not be negative"))
	}
	if o.MaxConnections < 0 || o.MaxConnectionsPerAddress < 0 || o.MaxConnectionsPerTenant < 0 {
		errs = append(errs, fmt.Errorf("--max-connections, --max-connections-per-address and --max-connections-per-tenant must not be negative"))
	}
	if o.MaxWatches < 0 {
		errs = append(errs, fmt.Errorf("--max-watches must not be negative"))
	}
	if o.TrafficBytesPerCPU < 0 || o.TrafficBurst < 0 || (o.TrafficBytesPerCPU > 0 && o.TrafficBurst == 0) {
		errs = append(errs, fmt.Errorf("--tenant-traffic-bytes-per-cpu and --tenant-traffic-burst-bytes must not be negative, and the burst must be positive when the rate is set"))
	}
	if !(o.TenantFraction > 0 && o.TenantFraction <= 1) {
		errs = append(errs, fmt.Errorf("--max-requests-inflight-tenant-fraction must be in (0,1], got %v", o.TenantFraction))
	}
	return errs
}

// Limits returns the budgets the options describe.
func (o *Options) Limits() Limits {
	return NewLimits(o.MaxRequestsInFlight, o.MaxMutatingRequestsInFlight, o.TenantFraction)
}

// WatchLimits returns the hub-wide bound on open watches and each
// tenant's: --max-watches (by default half of nofile, the open-file
// limit), and --max-watches-per-tenant but at most the tenant fraction of
// the hub-wide bound, so one tenant cannot hold every watch a small
// descriptor limit allows.
func (o *Options) WatchLimits(nofile uint64) (total, perTenant int) {
	total = o.MaxWatches
	if total == 0 && nofile > 0 {
		total = int(min(nofile/2, math.MaxInt32))
	}
	perTenant = o.MaxWatchesPerTenant
	if total > 0 {
		share := max(1, int(math.Ceil(float64(total)*o.TenantFraction)))
		if perTenant == 0 || perTenant > share {
			perTenant = share
		}
	}
	return total, perTenant
}

// queueLength is how many requests of one tenant may wait, per kind, and
// of one hub-wide queue: beyond it, 429 at once.
const queueLength = 50

// queueWait is how long a request over its tenant's share waits for a
// seat before 429: briefly, well inside clients' timeouts.
const queueWait = 5 * time.Second

// hubQueues is the number of hub-wide queues tenants are dealt into.
const hubQueues = 64

// EstimatorEntries is how many list sizes the hub remembers.
const EstimatorEntries = 50000

// NewController returns the flow control the options describe.
// stored, when not nil, weighs requests naming a big stored object by its
// size (stored.go).
func (o *Options) NewController(keyer Keyer, costs *Estimator, stored StoredSizes) (*Controller, error) {
	total, perTenant := o.WatchLimits(OpenFileLimit())
	return NewController(ControllerConfig{
		Keyer: keyer, Limits: o.Limits(), QueueLength: queueLength, HubQueues: hubQueues, QueueWait: queueWait,
		Estimator: costs, Watches: NewWatches(perTenant, total), Clock: eventclock.Real{},
		RefusalHold: RefusalHold,
		DenialRate:  DenialRate, DenialBurst: DenialBurst, DenialHold: DenialHold,
		TrafficRate: float64(o.TrafficBytesPerCPU) * float64(runtime.GOMAXPROCS(0)), TrafficBurst: o.TrafficBurst,
		HeavyCPUs: o.HeavyCPUs, BusyCPUs: o.BusyCPUs, UnturnedRequests: o.UnturnedRequests,
		Stored: stored,
	})
}
