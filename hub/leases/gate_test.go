package leases

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wharfhub/wharf/test/kube"
)

// candidate is one replica's Gate running in the test, with what it saw.
type candidate struct {
	name    string
	cancel  context.CancelFunc
	done    chan struct{}
	leading atomic.Bool
	mu      sync.Mutex
	holders []string
}

func (c *candidate) lastHolder() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.holders) == 0 {
		return ""
	}
	return c.holders[len(c.holders)-1]
}

// Two Gates against a real kube-apiserver: exactly one leads at any time,
// both observe it, and when the leader stops, the other takes over only
// after the leader's work has returned (the Lease is released then).
func TestGateHandsOver(t *testing.T) {
	cl := kube.Start(t, kube.Options{})
	client := cl.Clientset(t).CoordinationV1()
	timings := Timings{LeaseDuration: 2 * time.Second, RenewDeadline: 1200 * time.Millisecond, RetryPeriod: 400 * time.Millisecond, PollPeriod: 100 * time.Millisecond}
	ready := make(chan struct{})

	var active, maxActive atomic.Int32
	var stoppingDone atomic.Bool
	start := func(name string) *candidate {
		g, err := New(Config{Client: client, Identity: name, Ready: ready, Timings: timings})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		c := &candidate{name: name, cancel: cancel, done: make(chan struct{})}
		lead := func(lctx context.Context) {
			n := active.Add(1)
			for m := maxActive.Load(); n > m && !maxActive.CompareAndSwap(m, n); m = maxActive.Load() {
			}
			c.leading.Store(true)
			<-lctx.Done()
			// Stopping a plugin takes a while; nobody may lead meanwhile.
			time.Sleep(time.Second)
			c.leading.Store(false)
			stoppingDone.Store(true)
			active.Add(-1)
		}
		observe := func(h string) {
			c.mu.Lock()
			c.holders = append(c.holders, h)
			c.mu.Unlock()
		}
		go func() { defer close(c.done); g.Run(ctx, "edges", lead, observe) }()
		t.Cleanup(func() { cancel(); <-c.done })
		return c
	}
	a, b := start("hub-a"), start("hub-b")
	close(ready)

	waitFor(t, "a leader", func() bool { return a.leading.Load() || b.leading.Load() })
	first, second := a, b
	if b.leading.Load() {
		first, second = b, a
	}
	waitFor(t, "both to observe the leader", func() bool {
		return a.lastHolder() == first.name && b.lastHolder() == first.name
	})
	lease, err := client.Leases("kube-system").Get(t.Context(), LeaseName("edges"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := *lease.Spec.HolderIdentity; got != first.name {
		t.Fatalf("lease holder %q, want %q", got, first.name)
	}

	first.cancel()
	<-first.done
	if !stoppingDone.Load() {
		t.Fatal("Run returned before lead returned")
	}
	waitFor(t, "the other replica to take over", second.leading.Load)
	waitFor(t, "the new holder observed", func() bool { return second.lastHolder() == second.name })
	if maxActive.Load() != 1 {
		t.Fatalf("%d replicas led at once", maxActive.Load())
	}

	// A replica that cannot run the provider (lead returns while it still
	// holds the Lease) releases it and stops competing; another takes it.
	g, err := New(Config{Client: client, Identity: "hub-c", Timings: timings})
	if err != nil {
		t.Fatal(err)
	}
	var cLed atomic.Bool
	ran := make(chan struct{})
	cctx, ccancel := context.WithCancel(t.Context())
	go func() {
		defer close(ran)
		g.Run(cctx, "broken", func(context.Context) { cLed.Store(true) }, func(string) {})
	}()
	t.Cleanup(func() { ccancel(); <-ran })
	waitFor(t, "hub-c to lead once", cLed.Load)
	waitFor(t, "hub-c to release the lease after giving up", func() bool {
		lease, err := client.Leases("kube-system").Get(t.Context(), LeaseName("broken"), metav1.GetOptions{})
		return err == nil && (lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "")
	})
	d, err := New(Config{Client: client, Identity: "hub-d", Timings: timings})
	if err != nil {
		t.Fatal(err)
	}
	var dLed atomic.Bool
	dctx, dcancel := context.WithCancel(t.Context())
	dDone := make(chan struct{})
	go func() {
		defer close(dDone)
		d.Run(dctx, "broken", func(lctx context.Context) { dLed.Store(true); <-lctx.Done() }, func(string) {})
	}()
	t.Cleanup(func() { dcancel(); <-dDone })
	waitFor(t, "hub-d to take the released lease", dLed.Load)
	waitFor(t, "hub-d observed as holder", func() bool { h, ok := d.Holder("broken"); return ok && h == "hub-d" })
	// hub-c no longer competes, but still follows the Lease: it must
	// forward the provider's routes to hub-d, not serve them itself.
	waitFor(t, "hub-c to observe hub-d as holder", func() bool { h, ok := g.Holder("broken"); return ok && h == "hub-d" })
	select {
	case <-ran:
		t.Fatal("hub-c's Run returned before its context ended")
	default:
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
