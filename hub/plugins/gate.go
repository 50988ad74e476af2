package plugins

import (
	"context"
	"time"

	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/sdk/plugin"
)

// lostStopTimeout bounds the polite Stop of a plugin whose Gate was lost:
// leader election leaves LeaseDuration − RenewDeadline (4 s by default)
// between the holder giving up and another replica taking over.
const lostStopTimeout = 3 * time.Second

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
func (h *Host) gated(ctx context.Context, p *provider, l *launched) {
	log := klog.FromContext(ctx)
	l.c.Kill()
	h.cleanProviderSockets(ctx, p.name)
	h.update(p, func(s *Status) { s.State, s.Descriptor, s.Pid = StateStandby, l.d, 0 })
	lead := func(lctx context.Context) {
		log.Info("Holding single-replica provider; starting it")
		h.superviseLoop(ctx, lctx, p, nil)
		if lctx.Err() != nil && ctx.Err() == nil {
			log.Info("Lost single-replica provider; stopped it")
			h.update(p, func(s *Status) { s.State, s.Pid = StateStandby, 0 })
		}
		// Otherwise it failed for good here (StateFailed): returning with
		// lctx alive hands it to another replica.
	}
	observe := func(holder string) {
		h.update(p, func(s *Status) { s.Holder = holder })
	}
	h.cfg.Gate.Run(ctx, p.name, lead, observe)
	if ctx.Err() != nil {
		h.update(p, func(s *Status) { s.State, s.Pid = StateStopped, 0 })
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
