package leases

import (
	"context"
	"fmt"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// Timings of the election; see the package doc for how they relate.
type Timings struct {
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// DefaultTimings fail over well under 30 s.
func DefaultTimings() Timings {
	return Timings{LeaseDuration: 12 * time.Second, RenewDeadline: 8 * time.Second, RetryPeriod: time.Second}
}

// Config is what a Gate needs.
type Config struct {
	// Client reaches the root workspace of the hub's own API.
	Client coordinationv1client.LeasesGetter
	// Namespace holds the Leases; kube-system when empty.
	Namespace string
	// Identity is this replica's name, written as the Lease holder.
	Identity string
	// Ready, when set, is closed once the hub serves its API; the Gate
	// does not compete before.
	Ready <-chan struct{}
	// Timings zero means DefaultTimings.
	Timings Timings
}

// Gate competes for one Lease per replicas: single provider.
type Gate struct {
	cfg Config

	mu      sync.Mutex
	holders map[string]string
}

// New returns a Gate; it does nothing until Run.
func New(cfg Config) (*Gate, error) {
	if cfg.Client == nil || cfg.Identity == "" {
		return nil, fmt.Errorf("leases: client and identity are required")
	}
	if cfg.Namespace == "" {
		cfg.Namespace = metav1.NamespaceSystem
	}
	if cfg.Timings == (Timings{}) {
		cfg.Timings = DefaultTimings()
	}
	return &Gate{cfg: cfg, holders: map[string]string{}}, nil
}

// LeaseName is the Lease that decides who runs provider name.
func LeaseName(provider string) string { return "provider-" + provider }

// Holder returns the replica last observed holding the named provider's
// Lease; ok is false when none is known (not yet observed, or released).
func (g *Gate) Holder(provider string) (replica string, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	h := g.holders[provider]
	return h, h != ""
}

// Run implements plugins.Gate: it competes for the provider's Lease until
// ctx is done, and calls lead while holding it. After lead returns it
// releases the Lease if still held, then competes again.
func (g *Gate) Run(ctx context.Context, name string, lead func(ctx context.Context), observe func(holder string)) {
	log := klog.FromContext(ctx).WithValues("lease", g.cfg.Namespace+"/"+LeaseName(name))
	if g.cfg.Ready != nil {
		select {
		case <-ctx.Done():
			return
		case <-g.cfg.Ready:
		}
	}
	for ctx.Err() == nil {
		gaveUp, err := g.runOnce(ctx, name, lead, observe)
		if err != nil {
			log.Error(err, "Leader election for single-replica provider")
			return
		}
		if gaveUp {
			log.Info("This replica cannot run the provider; released its lease and stopped competing")
			g.observeOnly(ctx, name, observe)
			return
		}
	}
}

// observeOnly follows the Lease without competing, until ctx is done: a
// replica that cannot run the provider still forwards its routes, so it
// must keep learning who holds it. An expired or released Lease has no
// holder.
func (g *Gate) observeOnly(ctx context.Context, name string, observe func(string)) {
	tick := time.NewTicker(g.cfg.Timings.RetryPeriod)
	defer tick.Stop()
	for {
		h := ""
		l, err := g.cfg.Client.Leases(g.cfg.Namespace).Get(ctx, LeaseName(name), metav1.GetOptions{})
		if err == nil && l.Spec.HolderIdentity != nil && l.Spec.RenewTime != nil && l.Spec.LeaseDurationSeconds != nil &&
			time.Since(l.Spec.RenewTime.Time) <= time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second {
			h = *l.Spec.HolderIdentity
		}
		if err == nil || apierrors.IsNotFound(err) {
			g.mu.Lock()
			changed := g.holders[name] != h
			g.holders[name] = h
			g.mu.Unlock()
			if changed {
				observe(h)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// runOnce runs one leader election until it ends: ctx done, the Lease
// lost after having been held, or lead giving up (returning while it
// still held the Lease), which runOnce reports.
func (g *Gate) runOnce(ctx context.Context, name string, lead func(ctx context.Context), observe func(string)) (gaveUp bool, err error) {
	lock := &trackingLock{LeaseLock: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: g.cfg.Namespace, Name: LeaseName(name)},
		Client:     g.cfg.Client,
		LockConfig: resourcelock.ResourceLockConfig{Identity: g.cfg.Identity},
	}}
	var (
		le       *leaderelection.LeaderElector
		reportMu sync.Mutex
		done     = make(chan struct{})
		quit     atomic.Bool
	)
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	// OnNewLeader runs in its own goroutine per change; re-reading the
	// current holder under a mutex makes the last report the latest.
	report := func(string) {
		reportMu.Lock()
		defer reportMu.Unlock()
		h := le.GetLeader()
		g.mu.Lock()
		g.holders[name] = h
		g.mu.Unlock()
		observe(h)
	}
	t := g.cfg.Timings
	le, err = leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		Name:          LeaseName(name),
		LeaseDuration: t.LeaseDuration,
		RenewDeadline: t.RenewDeadline,
		RetryPeriod:   t.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				defer close(done)
				lead(lctx)
				if lctx.Err() == nil {
					quit.Store(true)
					stop()
				}
			},
			OnStoppedLeading: func() {},
			OnNewLeader:      report,
		},
	})
	if err != nil {
		return false, fmt.Errorf("leases: %w", err)
	}
	le.Run(rctx)
	if lock.acquired.Load() {
		// Run returns without waiting for OnStartedLeading: wait until the
		// plugin is stopped before anyone may take over.
		<-done
		g.release(ctx, lock)
	}
	return quit.Load(), nil
}

// release hands the Lease over at once when this replica still holds it,
// as client-go's ReleaseOnCancel does, but only after the plugin stopped.
func (g *Gate) release(ctx context.Context, lock *trackingLock) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.cfg.Timings.RetryPeriod)
	defer cancel()
	rec, _, err := lock.Get(rctx)
	if err != nil || rec.HolderIdentity != g.cfg.Identity {
		return
	}
	now := metav1.NewTime(time.Now())
	if err := lock.Update(rctx, resourcelock.LeaderElectionRecord{
		LeaderTransitions: rec.LeaderTransitions, LeaseDurationSeconds: 1, RenewTime: now, AcquireTime: now,
	}); err != nil {
		klog.FromContext(ctx).V(2).Info("Releasing provider lease failed; it expires", "lease", lock.Describe(), "err", err)
	}
}

// trackingLock records whether this replica ever wrote itself as holder,
// which is exactly when leader election started leading.
type trackingLock struct {
	*resourcelock.LeaseLock
	acquired atomic.Bool
}

func (l *trackingLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.LeaseLock.Create(ctx, r)
	l.note(r, err)
	return err
}

func (l *trackingLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.LeaseLock.Update(ctx, r)
	l.note(r, err)
	return err
}

func (l *trackingLock) note(r resourcelock.LeaderElectionRecord, err error) {
	if err == nil && r.HolderIdentity != "" && r.HolderIdentity == l.Identity() {
		l.acquired.Store(true)
	}
}

var _ resourcelock.Interface = (*trackingLock)(nil)
