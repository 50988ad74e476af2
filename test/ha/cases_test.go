package ha

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// shortWorkspaces is how many workspaces the fault cases write into.
const shortWorkspaces = 12

// TestHA runs the fault cases in order on one test bed: each leaves both
// replicas and all etcd members running for the next. The soak has a bed
// of its own (TestSoak), run alongside.
func TestHA(t *testing.T) {
	t.Parallel()
	b := newBed(t)
	ws := b.createWorkspaces(t, b.lb.URL, "ha", shortWorkspaces)
	// The probe prober watches the whole run: no two instances may ever
	// have served at once, whatever the case.
	t.Cleanup(func() {
		ivs := servingIntervals(t, b.servingLog)
		record(t, "singleprobe instances that served", len(ivs))
		if bad := overlaps(ivs); len(bad) > 0 {
			t.Errorf("two singleprobe instances served at once:\n%s", strings.Join(bad, "\n"))
		} else {
			record(t, "instances serving at once (max)", 1)
		}
	})
	t.Run("etcd member loss", func(t *testing.T) { etcdMemberLoss(t, b, ws) })
	t.Run("hub replica loss", func(t *testing.T) { hubReplicaLoss(t, b, ws) })
	t.Run("holder loss", func(t *testing.T) { holderLoss(t, b, 2) })
	t.Run("rolling restart", func(t *testing.T) { rollingRestart(t, b, ws) })
}

// settle runs the load for d, failing early if the test ends.
func settle(d time.Duration) { time.Sleep(d) }

// checkLoad stops ld, verifies it against the store through h, records
// it and fails on any lost write.
func checkLoad(t *testing.T, b *bed, ld *load, h *hubProc, ws []string) verifyResult {
	t.Helper()
	ld.stop()
	v := ld.l.verify(t, b.configMaps(t, h.URL), ws)
	recordLoad(t, ld, v)
	if v.missing+v.wrongRV+v.resurrected > 0 {
		t.Errorf("acknowledged writes lost: %s", strings.Join(v.examples[:min(len(v.examples), 10)], "; "))
	}
	if v.acked == 0 {
		t.Error("no write was acknowledged: the load did not run")
	}
	return v
}

// etcdMemberLoss kills a follower, then the leader, under mixed write
// load with resuming watches. Every acknowledged write must be found,
// every watch must see every acknowledged create, and no client may see
// an error: the writes in flight on the lost member (a follower's TCP
// connection resets under them, a leader's proposals time out in etcd)
// are retried by the hub on another member, and an attempt that may have
// been applied is resolved from the key or its history (hub/etcd
// retry.go), which etcd's client alone does not do.
func etcdMemberLoss(t *testing.T, b *bed, ws []string) {
	for _, leader := range []bool{false, true} {
		writers := 6
		b.lb.waitAllUp(t, 2)
		// Mixed: creates, and reads, updates and deletes of earlier
		// objects (each a read of the key, then a compare-and-swap on
		// its revision), plus resuming watches, whose lists read etcd's
		// current revision.
		ld := b.startLoad(t, b.lb.URL, loadSpec{writers: writers, workspaces: ws, watched: ws[:2], mixed: true, pause: 10 * time.Millisecond})
		wl := b.startWorkspaceLoad(t, fmt.Sprintf("wsload-%v", leader))
		settle(3 * time.Second)
		victim := b.etcdLeader(t)
		role := "leader"
		if !leader {
			victim, role = (victim+1)%3, "follower"
		}
		record(t, "etcd member killed", fmt.Sprintf("m%d (%s)", victim, role))
		m := b.etcd.members[victim]
		m.kill9()
		settle(5 * time.Second)
		m.start(t)
		b.etcd.waitHealthy(t, victim, 2*time.Minute)
		settle(3 * time.Second)
		ld.stopWriters()
		wl.check(t, b, role)
		watchersCaughtUp(t, ld)
		checkLoad(t, b, ld, b.hubs[0], ws)
		record(t, "slowest acknowledged write", time.Duration(ld.slowest.Load()).Round(10*time.Millisecond))
		n := ld.l.errorCount()
		record(t, "client errors losing the etcd "+role, n)
		if n > 0 {
			t.Errorf("%d client errors losing the etcd %s, want 0: %v", n, role, ld.l.errLog)
		}
	}
}

// watchersCaughtUp waits for ld's watches (with its writers stopped) to
// have seen every acknowledged create in their workspace, and fails for
// those that missed one.
func watchersCaughtUp(t *testing.T, ld *load) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, w := range ld.watchers {
		for len(w.missed(ld.l)) > 0 && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if m := w.missed(ld.l); len(m) > 0 {
			t.Errorf("watch on %s missed %d acknowledged creates, e.g. %s", w.ws, len(m), m[0])
		}
	}
}

// etcdLeader returns the index of the member that leads.
func (b *bed) etcdLeader(t *testing.T) int {
	t.Helper()
	cli := b.etcd.client(t, b.etcd.clientURL...)
	defer cli.Close()
	ids := map[uint64]int{}
	var leader uint64
	for i, u := range b.etcd.clientURL {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		st, err := cli.Status(ctx, u)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		ids[st.Header.MemberId] = i
		leader = st.Leader
	}
	i, ok := ids[leader]
	if !ok {
		t.Fatalf("no leader among %v", ids)
	}
	return i
}

func hubReplicaLoss(t *testing.T, b *bed, ws []string) {
	holder, _ := b.holder(t)
	// Kill the replica that does not run singleprobe: holder loss is its
	// own case.
	victim := b.other(holder)
	writers := 6
	b.lb.waitAllUp(t, 2)
	ld := b.startLoad(t, b.lb.URL, loadSpec{writers: writers, workspaces: ws, watched: ws[:4], pause: 10 * time.Millisecond})
	settle(3 * time.Second)
	// The case means something only if the victim carries load.
	st, err := b.lb.stats()
	if err != nil {
		t.Fatal(err)
	}
	record(t, "connections open to the killed replica", st[victim.Name].current)
	if st[victim.Name].current == 0 {
		t.Errorf("no client connection on %s when it was killed: %v", victim.Name, st)
	}
	victim.kill9()
	record(t, "hub replica killed", victim.Name)
	settle(5 * time.Second)
	ld.stopWriters()
	survivor := b.other(victim)
	// The watches resumed on the survivor from their resourceVersion: they
	// must have seen every acknowledged create, without a relist.
	deadline := time.Now().Add(30 * time.Second)
	for _, w := range ld.watchers {
		for len(w.missed(ld.l)) > 0 && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if m := w.missed(ld.l); len(m) > 0 {
			t.Errorf("watch on %s missed %d acknowledged creates, e.g. %s", w.ws, len(m), m[0])
		}
	}
	checkLoad(t, b, ld, survivor, ws)
	// Each writer and watcher has one request in flight at a time; only
	// those on the killed replica may fail, and only by their connection
	// ending, never by an answer.
	if n := ld.l.errorCount(); n > writers+len(ld.watchers) {
		t.Errorf("%d client errors, more than the %d requests that can have been in flight: %v", n, writers+len(ld.watchers), ld.l.errLog)
	}
	if !ld.l.connectionErrorsOnly() {
		t.Errorf("a server answered with an error: %v", ld.l.errLog)
	}
	victim.boot(t, b)
}

// holderLoss kills the replica running singleprobe n times and measures
// the time until the survivor serves it from a new instance.
func holderLoss(t *testing.T, b *bed, n int) {
	var times []time.Duration
	for i := range n {
		holder, _ := b.holder(t)
		survivor := b.other(holder)
		p := b.startProber(t, survivor.URL)
		deadline := time.Now().Add(30 * time.Second)
		for p.current() == "" && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		old := p.current()
		if old == "" {
			t.Fatalf("singleprobe never answered through %s", survivor.Name)
		}
		killedAt := time.Now()
		holder.kill9()
		var served time.Time
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if at, ok := p.firstOtherAfter(killedAt, old); ok {
				served = at
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no new singleprobe instance served within a minute of killing %s", holder.Name)
			}
		}
		p.stop()
		d := served.Sub(killedAt)
		times = append(times, d)
		record(t, fmt.Sprintf("failover %d (kill -9 %s → first answer via %s)", i+1, holder.Name, survivor.Name), d.Round(10*time.Millisecond))
		holder.boot(t, b)
	}
	var worst time.Duration
	for _, d := range times {
		worst = max(worst, d)
	}
	record(t, "failover worst", worst.Round(10*time.Millisecond))
	// The goal is ≤ 5 s (printed above); the bound here is generous so a
	// loaded machine does not flake, yet far below the old 11–15 s.
	if bound := 10 * time.Second; worst > bound {
		t.Errorf("failover took %s, more than %s", worst, bound)
	}
}

func rollingRestart(t *testing.T, b *bed, ws []string) {
	b.lb.waitAllUp(t, 2)
	ld := b.startLoad(t, b.lb.URL, loadSpec{writers: 6, workspaces: ws, watched: ws[:2], pause: 10 * time.Millisecond})
	settle(2 * time.Second)
	for _, h := range b.hubs {
		holder, _ := b.holder(t)
		var p *prober
		var old string
		if holder == h {
			p = b.startProber(t, b.other(h).URL)
			for deadline := time.Now().Add(30 * time.Second); p.current() == "" && time.Now().Before(deadline); {
				time.Sleep(50 * time.Millisecond)
			}
			old = p.current()
		}
		start := time.Now()
		if err := h.term(60 * time.Second); err != nil {
			t.Errorf("%s after SIGTERM: %v (want exit 0)", h.Name, err)
		}
		record(t, "drain "+h.Name+" (SIGTERM → exit 0)", time.Since(start).Round(10*time.Millisecond))
		if p != nil {
			// The new holder's plugin may answer only after the drained
			// replica exited (its start is not part of the drain): poll.
			at, ok := p.firstOtherAfter(start, old)
			for deadline := time.Now().Add(30 * time.Second); !ok && time.Now().Before(deadline); at, ok = p.firstOtherAfter(start, old) {
				time.Sleep(100 * time.Millisecond)
			}
			if ok {
				record(t, "handover on SIGTERM (→ first answer from new holder)", at.Sub(start).Round(10*time.Millisecond))
			} else {
				t.Errorf("singleprobe was not handed over when its holder %s drained", h.Name)
			}
			p.stop()
		}
		h.boot(t, b)
		b.lb.waitAllUp(t, 2)
	}
	settle(2 * time.Second)
	checkLoad(t, b, ld, b.hubs[0], ws)
	if n := ld.l.errorCount(); n != 0 {
		t.Errorf("%d client errors through haproxy during the rolling restart, want 0: %v", n, ld.l.errLog)
	}
}

// TestEmbeddedCrash kills a single hub on its embedded etcd under write
// load, restarts it on the same data dir and finds every acknowledged
// write.
func TestEmbeddedCrash(t *testing.T) {
	t.Parallel()
	_, probe := binaries(t)
	b := &bed{ca: newCA(t), probe: probe}
	port := freePorts(t, 1)[0]
	url := fmt.Sprintf("https://127.0.0.1:%d", port)
	h := b.newHub(t, hubSpec{name: "solo", port: port, externalURL: url})
	h.boot(t, b)
	ws := b.createWorkspaces(t, url, "crash", 4)
	ld := b.startLoad(t, url, loadSpec{writers: 4, workspaces: ws, pause: 5 * time.Millisecond})
	settle(4 * time.Second)
	h.kill9()
	ld.stop()
	h.boot(t, b)
	checkLoad(t, b, ld, h, ws)
}
