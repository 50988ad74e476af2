package leases

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// acquire polls the Lease until this replica holds it, and returns it with
// the local time just before the write that took it. ok is false when ctx
// ended first.
func (g *Gate) acquire(ctx context.Context, name string, observe func(string)) (l *coordinationv1.Lease, writeStart time.Time, ok bool) {
	log := klog.FromContext(ctx)
	var w watcher
	tick := g.cfg.Clock.NewTicker(g.cfg.Timings.PollPeriod)
	defer tick.Stop()
	for {
		cur, err := g.leases().Get(ctx, LeaseName(name), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			g.setHolder(name, "", observe)
			start := g.cfg.Clock.Now()
			fresh := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: g.cfg.Namespace, Name: LeaseName(name)}}
			g.claim(fresh, start)
			if l, err = g.leases().Create(ctx, fresh, metav1.CreateOptions{}); err == nil {
				return l, start, true
			}
			log.V(4).Info("Creating provider lease", "err", err)
		case err != nil:
			log.V(2).Info("Reading provider lease", "err", err)
		default:
			holder, free := w.see(cur, g.cfg.Clock.Now())
			g.setHolder(name, holder, observe)
			if free {
				start := g.cfg.Clock.Now()
				next := cur.DeepCopy()
				g.claim(next, start)
				if next.Spec.LeaseTransitions == nil {
					next.Spec.LeaseTransitions = ptr.To[int32](0)
				}
				*next.Spec.LeaseTransitions++
				// The update carries cur's resourceVersion: if anyone wrote the
				// Lease since it was read, this fails with a conflict.
				if l, err = g.leases().Update(ctx, next, metav1.UpdateOptions{}); err == nil {
					return l, start, true
				}
				log.V(4).Info("Taking provider lease", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return nil, time.Time{}, false
		case <-tick.C():
		}
	}
}

// claim writes this replica as holder into l.
func (g *Gate) claim(l *coordinationv1.Lease, now time.Time) {
	t := metav1.NewMicroTime(now)
	l.Spec.HolderIdentity = ptr.To(g.cfg.Identity)
	l.Spec.LeaseDurationSeconds = ptr.To(int32(g.cfg.Timings.LeaseDuration / time.Second))
	l.Spec.AcquireTime, l.Spec.RenewTime = &t, &t
}

// hold runs lead while this replica holds l, renewing it every
// RetryPeriod. It cancels lead's context when ctx ends, when the Lease is
// lost, or when RenewDeadline has passed since the start of the last
// successful renewal; it returns only after lead returned, and then
// releases the Lease. gaveUp reports that lead returned on its own.
func (g *Gate) hold(ctx context.Context, name string, l *coordinationv1.Lease, writeStart time.Time, lead func(context.Context), observe func(string)) (gaveUp bool) {
	log := klog.FromContext(ctx)
	t := g.cfg.Timings
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); lead(lctx) }()
	g.setHolder(name, g.cfg.Identity, observe)

	validUntil := writeStart.Add(t.RenewDeadline)
	renew := g.cfg.Clock.NewTimer(t.RetryPeriod)
	defer renew.Stop()
	fence := g.cfg.Clock.NewTimer(validUntil.Sub(g.cfg.Clock.Now()))
	defer fence.Stop()
	for {
		select {
		case <-ctx.Done():
		case <-done:
			gaveUp = ctx.Err() == nil
		case <-fence.C():
			// Another replica may take the Lease at LeaseDuration after
			// this renewal began; stopping now leaves the plugin
			// LeaseDuration − RenewDeadline to be gone.
			log.Info("Could not renew provider lease before its deadline; stopping the provider", "deadline", t.RenewDeadline)
		case <-renew.C():
			start := g.cfg.Clock.Now()
			next := l.DeepCopy()
			rt := metav1.NewMicroTime(start)
			next.Spec.RenewTime = &rt
			// Bounded by the fence: a renewal hanging in a slow API must not
			// keep this loop from stopping the provider at validUntil (the
			// fence is only seen between renewals). One attempt may use the
			// whole time left: on a loaded machine a write can take seconds,
			// and giving up on it early only loses the lease sooner.
			rctx, cancel := context.WithTimeout(ctx, validUntil.Sub(start))
			got, err := g.leases().Update(rctx, next, metav1.UpdateOptions{})
			cancel()
			switch {
			case err == nil:
				l, validUntil = got, start.Add(t.RenewDeadline)
				fence.Reset(validUntil.Sub(g.cfg.Clock.Now()))
				renew.Reset(t.RetryPeriod)
				continue
			case apierrors.IsConflict(err):
				// A renewal whose answer was lost (a timeout) may have been
				// applied: the Lease is still ours if it names this replica.
				// Its write time is unknown, so the fence stays where it is.
				if cur, gerr := g.leases().Get(ctx, l.Name, metav1.GetOptions{}); gerr == nil && cur.Spec.HolderIdentity != nil && *cur.Spec.HolderIdentity == g.cfg.Identity {
					l = cur
					renew.Reset(0)
					continue
				}
				log.Info("Provider lease taken over by another writer; stopping the provider", "err", err)
			case apierrors.IsNotFound(err):
				log.Info("Provider lease deleted; stopping the provider")
			default:
				log.V(2).Info("Renewing provider lease failed; retrying", "err", err)
				renew.Reset(t.PollPeriod)
				continue
			}
		}
		break
	}
	cancel()
	<-done
	g.release(ctx, l)
	g.setHolder(name, "", observe)
	return gaveUp
}

// release hands the Lease over at once, as client-go's ReleaseOnCancel
// does, but only after the plugin stopped. The update carries the last
// revision this replica wrote, so it cannot clear a Lease someone else
// took meanwhile. LeaseDurationSeconds 1 makes replicas still running
// client-go's leader election (an older hub in a rolling upgrade) take it
// within a second as well.
func (g *Gate) release(ctx context.Context, l *coordinationv1.Lease) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.cfg.Timings.LeaseDuration)
	defer cancel()
	next := l.DeepCopy()
	now := metav1.NewMicroTime(g.cfg.Clock.Now())
	next.Spec.HolderIdentity, next.Spec.LeaseDurationSeconds = nil, ptr.To[int32](1)
	next.Spec.RenewTime = &now
	if _, err := g.leases().Update(rctx, next, metav1.UpdateOptions{}); err != nil {
		klog.FromContext(ctx).V(2).Info("Releasing provider lease failed; it expires", "err", err)
	}
}
