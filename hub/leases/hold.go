package leases

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

// maxRenewals bounds the renewals in flight at once. Each is bounded by
// the fence, and one starts every RetryPeriod, so at most
// ⌈RenewDeadline/RetryPeriod⌉ (4 by default) could be; a hub too loaded to
// answer three in time gains little from a fourth.
const maxRenewals = 3

// renewal is the outcome of one renewal attempt begun at start.
type renewal struct {
	start time.Time
	err   error
}

// hold runs lead while this replica holds l, renewing it every
// RetryPeriod. It cancels lead's context when ctx ends, when the Lease is
// lost, or when RenewDeadline has passed since the start of the last
// successful renewal; it returns only after lead returned, and then
// releases the Lease. gaveUp reports that lead returned on its own.
//
// A renewal starts every RetryPeriod whether or not the previous one has
// returned, every PollPeriod while one has not (up to maxRenewals at once): on a hub whose CPU is taken, one
// renewal may wait seconds for its turn, and waiting for it before
// starting the next would stretch every gap between renewals by the
// slowest. Renewals are patches conditional on this replica being the
// holder (see renewPatch), so they do not conflict with each other, and
// each success moves the fence to RenewDeadline after its own start.
func (g *Gate) hold(ctx context.Context, name string, l *coordinationv1.Lease, writeStart time.Time, lead func(context.Context), observe func(string)) (gaveUp bool) {
	log := klog.FromContext(ctx)
	t := g.cfg.Timings
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); lead(lctx) }()
	g.setHolder(name, g.cfg.Identity, observe)

	validUntil := writeStart.Add(t.RenewDeadline)
	// The first renewal is due RetryPeriod after the write that took the
	// Lease began, at once if that has passed: on a loaded hub that write
	// can take seconds, and a whole period more left the first renewal
	// almost nothing of the deadline (fenced 0.5 s after the start).
	renew := g.cfg.Clock.NewTimer(max(0, writeStart.Add(t.RetryPeriod).Sub(g.cfg.Clock.Now())))
	defer renew.Stop()
	fence := g.cfg.Clock.NewTimer(validUntil.Sub(g.cfg.Clock.Now()))
	defer fence.Stop()
	// Renewals still in flight are cancelled and waited for before the
	// Lease is released, so none lands after the release.
	rctx, stopRenewals := context.WithCancel(ctx)
	var inFlight sync.WaitGroup
	results := make(chan renewal, maxRenewals)
	running := 0
	defer stopRenewals()
loop:
	for {
		select {
		case <-ctx.Done():
		case <-done:
			gaveUp = ctx.Err() == nil
		case <-fence.C():
			if g.cfg.Clock.Now().Before(validUntil) {
				continue // a renewal moved the fence after it fired
			}
			// Another replica may take the Lease at LeaseDuration after
			// the last successful renewal began; stopping now leaves the
			// plugin LeaseDuration − RenewDeadline to be gone.
			log.Info("Could not renew provider lease before its deadline; stopping the provider", "deadline", t.RenewDeadline, "inFlight", running)
		case <-renew.C():
			start := g.cfg.Clock.Now()
			if running >= maxRenewals || !start.Before(validUntil) {
				renew.Reset(t.RetryPeriod)
				continue
			}
			// While a renewal is slower than PollPeriod, the next one
			// follows after PollPeriod rather than RetryPeriod: on a
			// loaded hub answers take 1–2 s, some much longer, and a
			// success is what moves the fence (at most two writes a
			// second, and only then).
			next := t.RetryPeriod
			if running > 0 {
				next = min(t.PollPeriod, t.RetryPeriod)
			}
			renew.Reset(next)
			running++
			inFlight.Add(1)
			// The fence does not wait for renewals (this loop never
			// blocks on one). A renewal's success moves the fence to
			// RenewDeadline after its start, so after that it is of no
			// use; until then it is, even past the fence known now,
			// which a renewal begun later may move (bounding it by that
			// fence cut renewals short on a loaded hub just before a
			// slower one's success moved it).
			actx, acancel := context.WithTimeout(rctx, t.RenewDeadline)
			go func() {
				defer inFlight.Done()
				defer acancel()
				results <- renewal{start: start, err: g.renew(actx, name, start)}
			}()
			continue
		case r := <-results:
			running--
			now := g.cfg.Clock.Now()
			if took := now.Sub(r.start); took > t.RetryPeriod {
				log.Info("Slow provider lease renewal", "took", took, "err", r.err, "inFlight", running)
			}
			switch {
			case r.err == nil:
				log.V(4).Info("Renewed provider lease", "took", now.Sub(r.start))
				if until := r.start.Add(t.RenewDeadline); until.After(validUntil) {
					validUntil = until
					fence.Reset(validUntil.Sub(now))
				}
				continue
			case apierrors.IsInvalid(r.err):
				// 422: the test of renewPatch failed, the Lease names
				// another holder or none.
				log.Info("Provider lease taken over by another writer; stopping the provider", "err", r.err)
			case apierrors.IsNotFound(r.err):
				log.Info("Provider lease deleted; stopping the provider")
			default:
				// Timeouts included: the next renewal is at most one
				// RetryPeriod away; retry sooner if none is running.
				log.Info("Renewing provider lease failed; retrying", "err", r.err)
				if running == 0 {
					renew.Reset(min(t.PollPeriod, t.RetryPeriod))
				}
				continue
			}
		}
		break loop
	}
	cancel()
	<-done
	stopRenewals()
	inFlight.Wait()
	g.release(ctx, l)
	g.setHolder(name, "", observe)
	return gaveUp
}

// renew writes start as the Lease's renewTime, if this replica still
// holds it.
func (g *Gate) renew(ctx context.Context, name string, start time.Time) error {
	patch, err := g.renewPatch(start)
	if err != nil {
		return err
	}
	_, err = g.leases().Patch(ctx, LeaseName(name), types.JSONPatchType, patch, metav1.PatchOptions{})
	return err
}

// renewPatch is a JSON patch that sets renewTime to start, on condition
// that this replica is the holder. A candidate takes the Lease only by an
// update on a revision it has seen unchanged for LeaseDuration, so a
// renewal that succeeds either came before any take-over (it changed the
// revision, and the candidate's wait begins anew after start) or fails
// its test (the holder is another replica, or none). So a success that
// began at start keeps every other replica out until start +
// LeaseDuration, as an update on the revision read did; unlike that
// update, two renewals in flight do not conflict.
func (g *Gate) renewPatch(start time.Time) ([]byte, error) {
	return json.Marshal([]jsonPatchOp{
		{Op: "test", Path: "/spec/holderIdentity", Value: g.cfg.Identity},
		{Op: "replace", Path: "/spec/renewTime", Value: metav1.NewMicroTime(start)},
	})
}

// releasePatch clears the holder, on the same condition.
func (g *Gate) releasePatch(now time.Time) ([]byte, error) {
	return json.Marshal([]jsonPatchOp{
		{Op: "test", Path: "/spec/holderIdentity", Value: g.cfg.Identity},
		{Op: "remove", Path: "/spec/holderIdentity"},
		{Op: "replace", Path: "/spec/leaseDurationSeconds", Value: 1},
		{Op: "replace", Path: "/spec/renewTime", Value: metav1.NewMicroTime(now)},
	})
}

type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// release hands the Lease over at once, as client-go's ReleaseOnCancel
// does, but only after the plugin stopped. The patch holds only while
// this replica is the holder, so it cannot clear a Lease someone else
// took meanwhile. LeaseDurationSeconds 1 makes replicas still running
// client-go's leader election (an older hub in a rolling upgrade) take it
// within a second as well.
func (g *Gate) release(ctx context.Context, l *coordinationv1.Lease) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.cfg.Timings.LeaseDuration)
	defer cancel()
	patch, err := g.releasePatch(g.cfg.Clock.Now())
	if err == nil {
		_, err = g.leases().Patch(rctx, l.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
	}
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Releasing provider lease failed; it expires", "err", err)
	}
}
