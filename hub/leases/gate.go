package leases

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Timings of the election; see the package doc for how they relate.
type Timings struct {
	// LeaseDuration is written into the Lease: a candidate takes it over
	// once it has seen the same Lease revision for this long. Whole
	// seconds (the Lease field is in seconds).
	LeaseDuration time.Duration
	// RenewDeadline is how long after the start of its last successful
	// renewal the holder stops the provider. LeaseDuration − RenewDeadline
	// is the time it has to do so.
	RenewDeadline time.Duration
	// RetryPeriod is how often the holder renews: one write each.
	RetryPeriod time.Duration
	// PollPeriod is how often a candidate reads the Lease, and how soon a
	// failed renewal is retried.
	PollPeriod time.Duration
}

// DefaultTimings fail a killed holder over in at most LeaseDuration +
// PollPeriod (4.5 s) plus the plugin's start, at 60 Lease writes a
// minute per single provider.
func DefaultTimings() Timings {
	return Timings{LeaseDuration: 4 * time.Second, RenewDeadline: 3250 * time.Millisecond, RetryPeriod: time.Second, PollPeriod: 500 * time.Millisecond}
}

// Validate reports timings that break the fencing argument of the package
// doc.
func (t Timings) Validate() error {
	switch {
	case t.LeaseDuration < time.Second || t.LeaseDuration%time.Second != 0:
		return fmt.Errorf("lease duration %s must be a whole number of seconds", t.LeaseDuration)
	case t.RenewDeadline <= t.RetryPeriod:
		return fmt.Errorf("renew deadline %s must exceed the retry period %s, or one slow renewal loses the lease", t.RenewDeadline, t.RetryPeriod)
	case t.LeaseDuration-t.RenewDeadline < 500*time.Millisecond:
		return fmt.Errorf("lease duration %s must exceed the renew deadline %s by at least 500ms: the holder's time to stop", t.LeaseDuration, t.RenewDeadline)
	case t.PollPeriod <= 0 || t.RetryPeriod <= 0:
		return errors.New("poll and retry periods must be positive")
	}
	return nil
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
	// Clock measures every interval; nil means the real clock.
	Clock clock.WithTicker
}

// Gate competes for one Lease per replicas: single provider.
type Gate struct {
	cfg Config

	mu      sync.Mutex // guards holders
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
	if err := cfg.Timings.Validate(); err != nil {
		return nil, fmt.Errorf("leases: %w", err)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
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

// setHolder records h and calls observe when it changed.
func (g *Gate) setHolder(name, h string, observe func(string)) {
	g.mu.Lock()
	changed := g.holders[name] != h
	g.holders[name] = h
	g.mu.Unlock()
	if changed {
		observe(h)
	}
}

// Run implements plugins.Gate: it competes for the provider's Lease until
// ctx is done, and calls lead while holding it. After lead returns it
// releases the Lease if still held, then competes again.
func (g *Gate) Run(ctx context.Context, name string, lead func(ctx context.Context), observe func(holder string)) {
	log := klog.FromContext(ctx).WithValues("lease", g.cfg.Namespace+"/"+LeaseName(name))
	ctx = klog.NewContext(ctx, log)
	if !g.waitReady(ctx) {
		return
	}
	for ctx.Err() == nil {
		l, renewedAt, ok := g.acquire(ctx, name, observe)
		if !ok {
			return
		}
		log.V(2).Info("Acquired provider lease")
		if gaveUp := g.hold(ctx, name, l, renewedAt, lead, observe); gaveUp {
			log.Info("This replica cannot run the provider; released its lease and stopped competing")
			g.Observe(ctx, name, observe)
			return
		}
	}
}

// Observe follows the Lease without competing, until ctx is done: a
// replica that cannot run the provider, or that handed it over while it
// drains, still forwards its routes, so it must keep learning who holds
// it. An expired or released Lease has no holder.
func (g *Gate) Observe(ctx context.Context, name string, observe func(string)) {
	if !g.waitReady(ctx) {
		return
	}
	var w watcher
	tick := g.cfg.Clock.NewTicker(g.cfg.Timings.PollPeriod)
	defer tick.Stop()
	for {
		l, err := g.leases().Get(ctx, LeaseName(name), metav1.GetOptions{})
		switch {
		case err == nil:
			h, _ := w.see(l, g.cfg.Clock.Now())
			g.setHolder(name, h, observe)
		case apierrors.IsNotFound(err):
			g.setHolder(name, "", observe)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
	}
}

func (g *Gate) waitReady(ctx context.Context) bool {
	if g.cfg.Ready == nil {
		return ctx.Err() == nil
	}
	select {
	case <-ctx.Done():
		return false
	case <-g.cfg.Ready:
		return true
	}
}

func (g *Gate) leases() coordinationv1client.LeaseInterface {
	return g.cfg.Client.Leases(g.cfg.Namespace)
}

// watcher measures a Lease's expiry on this replica's clock: from when it
// first saw the current revision, never from the renewTime the holder
// wrote (clocks of different hosts need not agree, only run at similar
// rates). The first sighting of a revision is after its write began, so
// the expiry seen here is never earlier than the holder's.
type watcher struct {
	rv     string
	seenAt time.Time
}

// see returns the live holder ("" when none or expired) and whether the
// Lease may be taken now.
func (w *watcher) see(l *coordinationv1.Lease, now time.Time) (holder string, free bool) {
	if l.ResourceVersion != w.rv {
		w.rv, w.seenAt = l.ResourceVersion, now
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return "", true
	}
	d := time.Duration(0)
	if l.Spec.LeaseDurationSeconds != nil {
		d = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	if now.Sub(w.seenAt) >= d {
		return "", true
	}
	return *l.Spec.HolderIdentity, false
}
