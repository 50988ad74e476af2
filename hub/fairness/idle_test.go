package fairness

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	fq "k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/eventclock"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
)

// queueSetOf is tenant's queue set of kind k, nil when none is kept.
func queueSetOf(c *Controller, tenant string, k Kind) fq.QueueSet {
	c.mu.Lock()
	defer c.mu.Unlock()
	if tq := c.tenants[tenantKind{tenant, k}]; tq != nil {
		return tq.qs
	}
	return nil
}

// runOne runs one request of tenant that does nothing and reports whether
// it ran.
func runOne(c *Controller, tenant string, k Kind) bool {
	return c.run(context.Background(), tenant, k, fcrequest.WorkEstimate{InitialSeats: 1}, nil, func() {})
}

// checkIdleInvariants: every kept queue set with nothing in flight is in
// the idle list and no busy one is; the idle list holds only kept ones,
// at most its cap.
func checkIdleInvariants(t *testing.T, c *Controller, limit int) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	idle := 0
	for key, tq := range c.tenants {
		if (tq.refs == 0) != (tq.idle != nil) {
			t.Fatalf("%v: refs %d, in the idle list %v", key, tq.refs, tq.idle != nil)
		}
		if tq.refs == 0 {
			idle++
		}
	}
	if idle != c.idle.len() {
		t.Fatalf("%d idle queue sets kept, %d in the idle list", idle, c.idle.len())
	}
	for e := c.idle.order.Front(); e != nil; e = e.Next() {
		tq := e.Value.(*tenantQueue)
		if c.tenants[tq.key] != tq {
			t.Fatalf("idle list holds %v, which is not kept", tq.key)
		}
	}
	if idle > limit {
		t.Fatalf("%d idle queue sets kept, cap %d", idle, limit)
	}
}

// TestIdleQueueSetReused: a tenant's next request uses the queue set its
// last one left, not a new one.
func TestIdleQueueSetReused(t *testing.T) {
	c := newTestController(t, 0, nil)
	if !runOne(c, "bob", Mutating) {
		t.Fatal("not run")
	}
	first := queueSetOf(c, "bob", Mutating)
	if first == nil {
		t.Fatal("no queue set kept for an idle tenant")
	}
	for range 3 {
		if !runOne(c, "bob", Mutating) {
			t.Fatal("not run")
		}
	}
	if got := queueSetOf(c, "bob", Mutating); got != first {
		t.Fatal("a new queue set was built for a tenant whose idle one was kept")
	}
	checkIdleInvariants(t, c, maxIdleQueueSets)
}

// TestIdleQueueSetsBounded: at most the cap of idle queue sets is kept,
// the least recently used go first, and a busy one is never dropped.
func TestIdleQueueSetsBounded(t *testing.T) {
	c := newTestController(t, 0, nil)
	c.idle.max = 3
	// A request of "busy" runs throughout.
	entered, release, done := make(chan struct{}), make(chan struct{}), make(chan bool)
	go func() {
		done <- c.run(context.Background(), "busy", Mutating, fcrequest.WorkEstimate{InitialSeats: 1}, nil, func() {
			close(entered)
			<-release
		})
	}()
	<-entered
	busy := queueSetOf(c, "busy", Mutating)
	for i := range 10 {
		runOne(c, fmt.Sprintf("t%d", i), Mutating)
		checkIdleInvariants(t, c, 3)
	}
	for i := range 10 {
		kept := queueSetOf(c, fmt.Sprintf("t%d", i), Mutating) != nil
		if kept != (i >= 7) {
			t.Fatalf("t%d kept %v; want only the 3 most recently used (t7..t9)", i, kept)
		}
	}
	if queueSetOf(c, "busy", Mutating) != busy {
		t.Fatal("a busy tenant's queue set was dropped or replaced")
	}
	// t7 is used again: reused, and now the most recent; t0 comes back
	// with a new one, which pushes out the least recent (t8).
	t7 := queueSetOf(c, "t7", Mutating)
	runOne(c, "t7", Mutating)
	if queueSetOf(c, "t7", Mutating) != t7 {
		t.Fatal("t7's idle queue set was not reused")
	}
	runOne(c, "t0", Mutating)
	if queueSetOf(c, "t8", Mutating) != nil || queueSetOf(c, "t9", Mutating) == nil || queueSetOf(c, "t0", Mutating) == nil {
		t.Fatal("not the least recently used one was dropped")
	}
	close(release)
	if !<-done {
		t.Fatal("busy request not run")
	}
	checkIdleInvariants(t, c, 3)
	if queueSetOf(c, "busy", Mutating) != busy {
		t.Fatal("the queue set of a tenant just gone idle was not kept")
	}
}

// TestIdleQueueSetsConcurrent: many tenants' requests at once, with a cap
// smaller than the tenants: no tenant ever runs more than its share at
// once (as it would if it had two queue sets), every request runs (each
// waits in its tenant's queue), and the idle ones kept stay within the
// cap. Run with -race.
func TestIdleQueueSetsConcurrent(t *testing.T) {
	c, err := NewController(ControllerConfig{
		Keyer: testKeyer(), Limits: Limits{ReadOnly: 8, Mutating: 8, TenantReadOnly: 2, TenantMutating: 2},
		QueueLength: 1000, HubQueues: 8, Clock: eventclock.Real{},
	})
	if err != nil {
		t.Fatal(err)
	}
	c.idle.max = 4
	const tenants, workers, each = 12, 16, 150
	var running [tenants][2]atomic.Int32
	var over, notRun atomic.Int32
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				n, k := (w*7+i)%tenants, i%2
				ran := c.run(context.Background(), fmt.Sprintf("t%d", n), Kind(k), fcrequest.WorkEstimate{InitialSeats: 1}, nil, func() {
					if running[n][k].Add(1) > 2 {
						over.Add(1)
					}
					runtime.Gosched() // let others overlap
					running[n][k].Add(-1)
				})
				if !ran {
					notRun.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if over.Load() > 0 {
		t.Fatalf("%d times a tenant ran more than its share", over.Load())
	}
	if notRun.Load() > 0 {
		t.Fatalf("%d requests not run", notRun.Load())
	}
	checkIdleInvariants(t, c, 4)
	if c.idle.len() != 4 {
		t.Fatalf("%d idle queue sets kept, want the cap (4)", c.idle.len())
	}
}

// TestControllerReusedQueueSetsLimit: the shares hold the same on queue
// sets kept from earlier requests as on new ones (TestController's table,
// twice on one Controller).
func TestControllerReusedQueueSetsLimit(t *testing.T) {
	bob := &user.DefaultInfo{Name: "bob"}
	c := newTestController(t, 0, nil)
	table := []testReq{
		{u: bob, verb: "create", wantHeld: true},
		{u: bob, verb: "create", wantHeld: true},
		{u: bob, verb: "create", want: http.StatusTooManyRequests},
		{u: bob, verb: "get", wantHeld: true},
		{u: bob, verb: "get", wantHeld: true},
		{u: bob, verb: "get", want: http.StatusTooManyRequests},
	}
	runTable(t, c, table)
	waitSettled(c)
	tenant, _ := testKeyer().Tenant(context.Background(), bob)
	kept := queueSetOf(c, tenant, Mutating)
	if kept == nil {
		t.Fatal("no idle queue set kept")
	}
	runTable(t, c, table)
	if queueSetOf(c, tenant, Mutating) != kept {
		t.Fatal("the second round did not reuse the idle queue set")
	}
}
