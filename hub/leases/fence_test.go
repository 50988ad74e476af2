package leases

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/wharfhub/wharf/test/kube"
)

// partitioned cuts one replica off the API when cut is set: every Lease
// call fails as a network partition would, or, with hang, never answers
// until its context ends (an overloaded API).
type partitioned struct {
	coordinationv1client.LeasesGetter
	cut  *atomic.Bool
	hang bool
}

func (p partitioned) Leases(ns string) coordinationv1client.LeaseInterface {
	return partitionedLeases{p.LeasesGetter.Leases(ns), p.cut, p.hang}
}

type partitionedLeases struct {
	coordinationv1client.LeaseInterface
	cut  *atomic.Bool
	hang bool
}

var errCut = errors.New("partitioned")

func (p partitionedLeases) fail(ctx context.Context) error {
	if p.hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return errCut
}

func (p partitionedLeases) Get(ctx context.Context, name string, o metav1.GetOptions) (*coordinationv1.Lease, error) {
	if p.cut.Load() {
		return nil, p.fail(ctx)
	}
	return p.LeaseInterface.Get(ctx, name, o)
}

func (p partitionedLeases) Update(ctx context.Context, l *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if p.cut.Load() {
		return nil, p.fail(ctx)
	}
	return p.LeaseInterface.Update(ctx, l, o)
}

func (p partitionedLeases) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, o metav1.PatchOptions, sub ...string) (*coordinationv1.Lease, error) {
	if p.cut.Load() {
		return nil, p.fail(ctx)
	}
	return p.LeaseInterface.Patch(ctx, name, pt, data, o, sub...)
}

func (p partitionedLeases) Create(ctx context.Context, l *coordinationv1.Lease, o metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if p.cut.Load() {
		return nil, p.fail(ctx)
	}
	return p.LeaseInterface.Create(ctx, l, o)
}

// A holder that can no longer reach the API (it is not dead, so it cannot
// release) stops leading at its renew deadline; the other replica starts
// only after the lead function of the first has returned, and no earlier
// than LeaseDuration after the holder's last renewal. The holder's stop
// takes almost all of LeaseDuration − RenewDeadline, so a gate that took
// over early, or fenced late, shows two leaders at once.
func TestGateFencesPartitionedHolder(t *testing.T) {
	cl := kube.Start(t, kube.Options{})
	for _, tc := range []struct {
		name string
		hang bool
	}{{"refused", false}, {"hung", true}} {
		t.Run(tc.name, func(t *testing.T) { fencesPartitionedHolder(t, cl, tc.hang) })
	}
}

func fencesPartitionedHolder(t *testing.T, cl *kube.Cluster, hang bool) {
	client := cl.Clientset(t).CoordinationV1()
	timings := Timings{LeaseDuration: 2 * time.Second, RenewDeadline: 1200 * time.Millisecond, RetryPeriod: 400 * time.Millisecond, PollPeriod: 100 * time.Millisecond}
	stopTakes := 600 * time.Millisecond

	var (
		mu        sync.Mutex
		intervals = map[string][2]time.Time{}
		active    atomic.Int32
		overlap   atomic.Bool
	)
	run := func(name string, c coordinationv1client.LeasesGetter) (leading *atomic.Bool) {
		g, err := New(Config{Client: c, Identity: name, Timings: timings})
		if err != nil {
			t.Fatal(err)
		}
		leading = &atomic.Bool{}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			g.Run(ctx, "fenced-"+fmt.Sprint(hang), func(lctx context.Context) {
				if active.Add(1) > 1 {
					overlap.Store(true)
				}
				leading.Store(true)
				start := time.Now()
				<-lctx.Done()
				time.Sleep(stopTakes)
				leading.Store(false)
				active.Add(-1)
				mu.Lock()
				intervals[name] = [2]time.Time{start, time.Now()}
				mu.Unlock()
			}, func(string) {})
		}()
		t.Cleanup(func() { cancel(); <-done })
		return leading
	}
	var cutA atomic.Bool
	aLeads := run("hub-a", partitioned{client, &cutA, hang})
	waitFor(t, "hub-a to lead", aLeads.Load)
	bLeads := run("hub-b", client)
	time.Sleep(time.Second) // hub-b now follows hub-a's renewals
	if bLeads.Load() {
		t.Fatal("hub-b leads while hub-a renews")
	}
	cutAt := time.Now()
	cutA.Store(true)
	waitFor(t, "hub-b to take over", bLeads.Load)
	tookOver := time.Since(cutAt)
	mu.Lock()
	a, ok := intervals["hub-a"]
	mu.Unlock()
	if !ok {
		t.Fatal("hub-b leads while hub-a's lead has not returned")
	}
	if overlap.Load() {
		t.Fatal("two replicas led at once")
	}
	if fenced := a[1].Sub(cutAt) - stopTakes; fenced > timings.RenewDeadline+200*time.Millisecond {
		t.Errorf("hub-a stopped %s after the partition, later than its renew deadline %s", fenced, timings.RenewDeadline)
	}
	if tookOver < timings.LeaseDuration-timings.RetryPeriod {
		t.Errorf("hub-b took over %s after the partition: before the lease could have expired", tookOver)
	}
	t.Logf("partitioned holder fenced; takeover after %s", tookOver)
}
