package storecap

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	clocktesting "k8s.io/utils/clock/testing"

	wetcd "github.com/wharfhub/wharf/hub/etcd"
)

const testQuota = 32 << 20

// etcdBatchInterval is a little more than etcd's default backend batch
// interval (100 ms): what a compaction freed is seen after one commit.
const etcdBatchInterval = 120 * time.Millisecond

// startEtcd starts a real embedded member with a small quota.
func startEtcd(t *testing.T) (*wetcd.Embedded, *clientv3.Client) {
	t.Helper()
	e, err := wetcd.StartEmbeddedWithQuota(context.Background(), filepath.Join(t.TempDir(), "etcd"), testQuota)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{e.ClientURL}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return e, c
}

func newTestMonitor(e *wetcd.Embedded, c *clientv3.Client) (*Monitor, *clocktesting.FakeClock, *[]string) {
	clk := clocktesting.NewFakeClock(time.Unix(1_000_000, 0))
	m := New(Config{Client: c, Endpoints: []string{e.ClientURL}, Quota: testQuota, HighWater: 0.8, Interval: time.Second, Defrag: true, Clock: clk})
	var events []string
	m.SetRecorder(func(_, reason, _ string) { events = append(events, reason) })
	return m, clk, &events
}

// syncUntil polls (stepping the fake clock a poll each time) until cond
// holds; bounded by polls, not by time.
func syncUntil(t *testing.T, m *Monitor, clk *clocktesting.FakeClock, what string, cond func(State) bool) {
	t.Helper()
	for i := 0; i < 60; i++ {
		if err := m.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		if cond(m.State()) {
			return
		}
		clk.Step(time.Second)
	}
	t.Fatalf("%s: not reached after 60 polls; state %+v", what, m.State())
}

// A store filled to the mark refuses writes; once the data is deleted the
// monitor compacts and defragments, and writes are let in again.
func TestMonitorHighWaterCompactsAndDefrags(t *testing.T) {
	ctx := context.Background()
	e, c := startEtcd(t)
	m, clk, events := newTestMonitor(e, c)
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if st := m.State(); !st.Known || st.High || !m.admit(1, true) {
		t.Fatalf("fresh store: state %+v, want known, not high, admitting", st)
	}
	val := strings.Repeat("x", 1<<20)
	// A tenant writes 1 MiB at a time, each through the plugin's check,
	// until it is refused.
	var n, refusals int
	for i := 0; i < 200 && refusals < 3; i++ {
		if !m.admit(int64(len(val)), true) {
			refusals++
		} else {
			refusals = 0
			n++
			resp, err := c.Put(ctx, fmt.Sprintf("/fill/%d", n), val)
			if err != nil {
				t.Fatalf("put %d: %v (the mark must come before NOSPACE)", n, err)
			}
			// Have etcd commit it now, as its 100 ms batch would long
			// before the hub's next poll: a physical compaction ends
			// with a forced commit.
			if _, err := c.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
				t.Fatal(err)
			}
		}
		clk.Step(time.Second)
		if err := m.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	st := m.State()
	t.Logf("tenant: %d MiB written, then refused; %+v", n, st)
	if refusals < 3 || st.Alarm || st.Size >= testQuota {
		t.Fatalf("after %d MiB: %d refusals, state %+v (mark %d)", n, refusals, st, m.HighWaterBytes())
	}
	// A hub admin's writes are not checked: they take the store past the
	// mark, and the monitor then refuses every non-admin write.
	// (Refusals may already come from the file mark: compactions leave
	// the file fragmented.)
	for i := 0; !m.State().High; i++ {
		if i == 10 {
			t.Fatalf("10 MiB of admin writes past the refusals and not above the mark: %+v", m.State())
		}
		if _, err := c.Put(ctx, fmt.Sprintf("/fill/admin-%d", i), val); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Compact(ctx, 1, clientv3.WithCompactPhysical()); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
			t.Fatal(err)
		}
		clk.Step(time.Second)
		if err := m.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if st := m.State(); st.Alarm || st.Size >= testQuota {
		t.Fatalf("the store reached its quota: %+v", st)
	}
	if m.admit(0, false) {
		t.Fatal("high store admitted a write")
	}
	if len(*events) != 1 || (*events)[0] != "StoreHighWater" {
		t.Fatalf("events %v, want [StoreHighWater]", *events)
	}
	before, err := c.Get(ctx, "/fill/1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete(ctx, "/fill/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	syncUntil(t, m, clk, "below the mark after deletes", func(s State) bool { return !s.High })
	// Above the mark the monitor compacted (the deleted values' old
	// revisions are gone) and defragmented.
	if _, err := c.Get(ctx, "/fill/1", clientv3.WithRev(before.Header.Revision)); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Errorf("read at the pre-delete revision: %v, want compacted", err)
	}
	if m.lastCompactRev < before.Header.Revision || m.lastDefrag.IsZero() {
		t.Errorf("compacted to %d (want at least %d), defragmented at %v", m.lastCompactRev, before.Header.Revision, m.lastDefrag)
	}
	if !m.admit(1, true) {
		t.Error("writes still refused")
	}
	if got := strings.Join(*events, ","); got != "StoreHighWater,StoreBelowHighWater" {
		t.Errorf("events %s", got)
	}
}

// A tenant rewriting one large object in a loop stores little, but every
// revision counts in the bytes in use until compacted: from half the mark
// the monitor compacts all but one gap of history, so the rewrites never
// reach the mark (outside review row 29: they did, and every tenant's
// writes were refused).
func TestMonitorRewritesDoNotReachTheMark(t *testing.T) {
	ctx := context.Background()
	e, c := startEtcd(t)
	m, clk, events := newTestMonitor(e, c)
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	val := strings.Repeat("y", 1<<20)
	// Three times the quota, one 1 MiB rewrite per poll.
	for i := 0; i < 3*testQuota>>20; i++ {
		if !m.admit(int64(len(val)), true) {
			t.Fatalf("rewrite %d refused: state %+v, mark %d", i, m.State(), m.HighWaterBytes())
		}
		if _, err := c.Put(ctx, "/rewrite/big", val+fmt.Sprint(i)); err != nil {
			t.Fatalf("rewrite %d: %v", i, err)
		}
		// Pages a compaction frees count as in use until etcd's next
		// batch commit (every 100 ms). Polls are at least that far apart
		// in production (--storage-poll-interval >= 100ms); without the
		// pause this loop ran faster than etcd commits and failed at
		// random (main, rewrite 22).
		time.Sleep(etcdBatchInterval)
		clk.Step(time.Second)
		if err := m.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	st := m.State()
	if st.High || st.Alarm || len(*events) != 0 {
		t.Fatalf("after rewrites: state %+v, events %v", st, *events)
	}
	if m.lastCompactRev == 0 {
		t.Fatal("never compacted")
	}
}

// An armed NOSPACE alarm refuses every write, etcd's own included; the
// monitor disarms it once the file is below the mark.
func TestMonitorDisarmsNOSPACE(t *testing.T) {
	ctx := context.Background()
	e, c := startEtcd(t)
	m, clk, events := newTestMonitor(e, c)
	st, err := c.Status(ctx, e.ClientURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pb.NewMaintenanceClient(c.ActiveConnection()).Alarm(ctx, &pb.AlarmRequest{
		Action: pb.AlarmRequest_ACTIVATE, MemberID: st.Header.MemberId, Alarm: pb.AlarmType_NOSPACE,
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "/k", "v"); !errors.Is(err, rpctypes.ErrNoSpace) {
		t.Fatalf("put with the alarm armed: %v, want %v", err, rpctypes.ErrNoSpace)
	}
	syncUntil(t, m, clk, "alarm disarmed", func(s State) bool { return !s.Alarm && !s.High })
	al, err := c.AlarmList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(al.Alarms) != 0 {
		t.Fatalf("alarms left: %v", al.Alarms)
	}
	if _, err := c.Put(ctx, "/k", "v"); err != nil {
		t.Fatalf("put after disarm: %v", err)
	}
	if !strings.Contains(strings.Join(*events, ","), "StoreAlarmDisarmed") {
		t.Errorf("events %v lack StoreAlarmDisarmed", *events)
	}
}

// Run polls on the injected clock: nothing is measured again until the
// clock moves a poll.
func TestMonitorRunPollsOnClock(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, c := startEtcd(t)
	m, clk, _ := newTestMonitor(e, c)
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	waitFor(t, "first poll", func() bool { return m.State().Known })
	first := m.State().InUse
	if _, err := c.Put(ctx, "/big", strings.Repeat("y", 1<<20)); err != nil {
		t.Fatal(err)
	}
	// etcd commits its batch every 100 ms, so a poll right after the put
	// may still see the old size: every step of the clock is one more
	// poll.
	waitFor(t, "a later poll", func() bool {
		clk.Step(time.Second)
		return m.State().InUse > first
	})
	cancel()
	<-done
}

// waitFor waits for another goroutine's progress; the bound only guards
// a hang, nothing is asserted about time.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 3000; i++ {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s: never happened", what)
}
