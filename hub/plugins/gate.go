package plugins

import (
	"context"
	"fmt"
	"time"

	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/sdk/plugin"
)

// lostStopTimeout bounds the polite Stop of a plugin whose Gate was lost:
// the lease leaves LeaseDuration − RenewDeadline (1 s by default)
// between the holder giving up and another replica taking over.
const lostStopTimeout = 500 * time.Millisecond

// Gate keeps a replicas: single provider running on at most one hub
// replica (package leases implements it with a coordination Lease).
type Gate interface {
	// Run competes for the right to run the named provider until ctx is
	// done. While this replica holds it, Run calls lead with a context
	// that ends when the right is lost; lead returns once the plugin is
	// stopped, and Run must not let another replica take over before lead
	// has returned (nor return itself while lead runs). If lead returns
	// while its context is still alive, this replica cannot run the
	// provider: Run gives the right up, stops competing and returns.
	// observe is called with the replica name of each newly observed
	// holder ("" for none).
	Run(ctx context.Context, name string, lead func(ctx context.Context), observe func(holder string))
}

// firstLaunch launches the plugin until it answers Describe, so the Host
// learns whether it is a replicas: single provider before running it. It
// reports false when the provider failed for good or ctx ended; the status
// says which.
func (h *Host) firstLaunch(ctx context.Context, p *provider) (*launched, bool) {
	attempt := 0
	for {
		sctx, cancel := context.WithTimeout(ctx, h.cfg.Supervision.StartTimeout)
		l, err := h.launch(sctx, p)
		cancel()
		if err == nil {
			return l, true
		}
		if ctx.Err() != nil {
			h.update(p, func(s *Status) { s.State, s.Pid = StateStopped, 0 })
			return nil, false
		}
		if !h.retry(ctx, p, err, &attempt) {
			return nil, false
		}
	}
}

// gated runs a replicas: single provider under the Gate. The launched
// process only served to read the manifest: it is killed, so that no
// replica runs the plugin without holding it.
func (h *Host) gated(ctx context.Context, p *provider, l *launched, released func()) {
	log := klog.FromContext(ctx)
	l.c.Kill()
	h.cleanProviderSockets(ctx, p.name)
	h.update(p, func(s *Status) { s.State, s.Descriptor, s.Pid = StateStandby, l.d, 0 })
	gctx, stop := context.WithCancel(ctx)
	defer stop()
	lead := func(lctx context.Context) {
		log.Info("Holding single-replica provider; starting it")
		h.superviseLoop(ctx, lctx, p, nil)
		switch {
		case lctx.Err() == nil || ctx.Err() != nil:
			// It failed for good here (StateFailed): returning with lctx
			// alive hands it to another replica. Or the hub stops.
		case gctx.Err() == nil:
			// The Gate took it away (a renewal missed its deadline, or
			// another replica holds the Lease): counted, as the fourth
			// outside review saw it only in the log.
			log.Info("Lost single-replica provider; stopped it")
			h.update(p, func(s *Status) { s.State, s.Pid, s.LeaseLosses = StateStandby, 0, s.LeaseLosses+1 })
		default:
			log.Info("Handed single-replica provider over; stopped it")
			h.update(p, func(s *Status) { s.State, s.Pid = StateStandby, 0 })
		}
	}
	observe := func(holder string) {
		h.update(p, func(s *Status) { s.Holder = holder })
	}
	go func() {
		select {
		case <-h.handover:
			stop()
		case <-gctx.Done():
		}
	}()
	h.cfg.Gate.Run(gctx, p.name, lead, observe)
	released()
	if gctx.Err() != nil {
		h.update(p, func(s *Status) { s.State, s.Pid = StateStopped, 0 })
	}
	// Handed over while the hub drains: keep following the Lease so that
	// this replica forwards the provider's routes to the new holder.
	if o, ok := h.cfg.Gate.(Observer); ok && ctx.Err() == nil && gctx.Err() != nil {
		o.Observe(ctx, p.name, observe)
	}
}

// Observer is a Gate that can follow the holder without competing.
type Observer interface {
	Observe(ctx context.Context, name string, observe func(holder string))
}

// Handover stops this replica's replicas: single providers and gives
// their Leases up, so that another replica takes them at once; the other
// providers keep running until Run's context ends. It returns when every
// such provider is stopped and its Lease released, or when ctx ends.
// The hub calls it first thing on shutdown, while its API still serves.
func (h *Host) Handover(ctx context.Context) error {
	h.handoverOnce.Do(func() { close(h.handover) })
	h.mu.Lock()
	counted := h.counted
	h.mu.Unlock()
	if !counted {
		// Run has not started any provider; those it starts now see
		// handover closed and never compete.
		return nil
	}
	done := make(chan struct{})
	go func() { h.gatedRunning.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("handing single-replica providers over: %w", context.Cause(ctx))
	}
}

// Holder reports which hub replica runs the named provider: for a
// replicas: single provider the holder the Gate last observed, for any
// other provider this replica (Config.Replica) while it runs here. ok is
// false when no replica is known to run it.
func (h *Host) Holder(name string) (replica string, ok bool) {
	st, found := h.Status(name)
	if !found {
		return "", false
	}
	if h.cfg.Gate != nil && st.Descriptor != nil && st.Descriptor.Replicas == plugin.ReplicasSingle {
		return st.Holder, st.Holder != ""
	}
	if st.State == StateRunning {
		return h.cfg.Replica, true
	}
	return "", false
}
