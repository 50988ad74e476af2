package server

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/spf13/pflag"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// ShutdownOptions say how a hub replica drains on SIGTERM.
type ShutdownOptions struct {
	// Delay is how long /readyz fails while the hub still serves, so that
	// a load balancer stops sending it traffic before it stops listening.
	Delay time.Duration
	// Grace bounds how long requests and streams in flight may go on once
	// the hub stops accepting new ones.
	Grace time.Duration
}

// DefaultShutdown fits in Kubernetes' default 30 s termination grace
// period: 5 s for endpoints and load balancers to notice, 20 s for what is
// in flight.
func DefaultShutdown() ShutdownOptions {
	return ShutdownOptions{Delay: 5 * time.Second, Grace: 20 * time.Second}
}

// AddFlags binds the options to fs.
func (o *ShutdownOptions) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.Delay, "shutdown-delay", o.Delay,
		"On SIGTERM, how long /readyz fails while the hub keeps serving, so that load balancers take it out first. Single-replica providers are handed to another replica at once.")
	fs.DurationVar(&o.Grace, "shutdown-grace", o.Grace,
		"After --shutdown-delay, how long requests and streams in flight (watches, SSE, websockets, tunnels) may go on before the hub exits.")
}

// Validate reports invalid options.
func (o *ShutdownOptions) Validate() []error {
	if o.Delay < 0 || o.Grace < 0 {
		return []error{fmt.Errorf("--shutdown-delay and --shutdown-grace must not be negative")}
	}
	return nil
}

// applyTo hands the delay and grace to the generic server's config, which
// fails /readyz at once, keeps serving for the delay, then stops listening
// and waits for the watches in flight (the requests' bound is the
// server's ShutdownTimeout, set by applyToServer).
func (o *ShutdownOptions) applyTo(c *genericapiserver.Config) {
	c.ShutdownDelayDuration = o.Delay
	c.ShutdownWatchTerminationGracePeriod = o.Grace
}

// applyToServer bounds net/http's Shutdown (connections in flight) by the
// grace period; upstream takes the request timeout.
func (o *ShutdownOptions) applyToServer(s *genericapiserver.GenericAPIServer) {
	s.ShutdownTimeout = o.Grace
}

// inFlight counts every request the hub's handler is serving, streams
// included. The generic server's own wait groups see only the API chain,
// and net/http's Shutdown forgets hijacked connections (websockets,
// tunnels); the provider routes bypass both, so the hub waits on this
// before it stops the plugins that serve them.
type inFlight struct {
	clock clock.WithTicker

	mu sync.Mutex // guards n
	n  int
}

func newInFlight(c clock.WithTicker) *inFlight { return &inFlight{clock: c} }

func (f *inFlight) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.add(1)
		defer f.add(-1)
		h.ServeHTTP(w, r)
	})
}

func (f *inFlight) add(d int) {
	f.mu.Lock()
	f.n += d
	f.mu.Unlock()
}

func (f *inFlight) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// wait returns once nothing is in flight or at deadline, reporting how
// many requests were cut.
func (f *inFlight) wait(ctx context.Context, deadline time.Time) int {
	tick := f.clock.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		n := f.count()
		if n == 0 || !f.clock.Now().Before(deadline) {
			return n
		}
		select {
		case <-ctx.Done():
			return f.count()
		case <-tick.C():
		}
	}
}

// handoverHook gives the single-replica providers' Leases up as soon as
// shutdown begins. Pre-shutdown hooks run while the server still listens
// (it stops only after the delay and every hook), so the release goes
// through the hub's own API, and the other replica takes over within its
// poll period while this one, still serving, forwards to it.
func (h *Hub) handoverHook() error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	start := time.Now()
	if err := h.Extra.Plugins.Handover(ctx); err != nil {
		// The Lease expires on its own; shutdown goes on.
		klog.ErrorS(err, "Handing single-replica providers over")
		return nil
	}
	klog.InfoS("Handed single-replica providers over", "took", time.Since(start))
	return nil
}

// drainStreams waits, up to the grace period after the delay, for the
// requests the generic server does not wait for.
func (h *Hub) drainStreams(ctx context.Context, shutdownStart time.Time) {
	s := h.Extra.Shutdown
	deadline := shutdownStart.Add(s.Delay + s.Grace)
	if n := h.Extra.InFlight.wait(ctx, deadline); n > 0 {
		klog.InfoS("Shutdown grace period over; closing requests still in flight", "requests", n, "grace", s.Grace)
	}
}
