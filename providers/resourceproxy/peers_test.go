package resourceproxy

import (
	"errors"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

var errDial = errors.New("connection refused")

func TestPeersRoundRobin(t *testing.T) {
	p := NewPeers(clocktesting.NewFakeClock(time.Now()), []string{"a:1", "b:1", "c:1"})
	var got []string
	for range 6 {
		h, trial, reason := p.Pick()
		if reason != "" || trial {
			t.Fatalf("pick: reason %q trial %v", reason, trial)
		}
		got = append(got, h)
	}
	want := []string{"a:1", "b:1", "c:1", "a:1", "b:1", "c:1"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("picks %v, want %v", got, want)
		}
	}
}

func TestPeersQuarantineAndTrial(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	p := NewPeers(clk, []string{"a:1", "b:1"})
	quarantines := 0
	p.onQuarantine = func() { quarantines++ }
	steps := []struct {
		name   string
		do     func()
		wantA  PeerState
		counts map[PeerState]int
	}{
		{"two failures keep it healthy", func() { p.Result("a:1", errDial); p.Result("a:1", errDial) }, PeerHealthy, map[PeerState]int{PeerHealthy: 2}},
		{"a success resets the count", func() { p.Result("a:1", nil); p.Result("a:1", errDial); p.Result("a:1", errDial) }, PeerHealthy, map[PeerState]int{PeerHealthy: 2}},
		{"the third consecutive failure quarantines", func() { p.Result("a:1", errDial) }, PeerQuarantined, map[PeerState]int{PeerHealthy: 1, PeerQuarantined: 1}},
		{"19.9 s later still quarantined", func() { clk.Step(QuarantineDuration - 100*time.Millisecond) }, PeerQuarantined, map[PeerState]int{PeerHealthy: 1, PeerQuarantined: 1}},
		{"at 20 s half open", func() { clk.Step(100 * time.Millisecond) }, PeerHalfOpen, map[PeerState]int{PeerHealthy: 1, PeerHalfOpen: 1}},
	}
	for _, s := range steps {
		s.do()
		if st, _ := p.State("a:1"); st != s.wantA {
			t.Fatalf("%s: a is %s, want %s", s.name, st, s.wantA)
		}
		c := p.Counts()
		for _, state := range []PeerState{PeerHealthy, PeerQuarantined, PeerHalfOpen} {
			if c[state] != s.counts[state] {
				t.Fatalf("%s: counts %v, want %v", s.name, c, s.counts)
			}
		}
	}
	if quarantines != 1 {
		t.Fatalf("quarantines = %d, want 1", quarantines)
	}
	// The half-open peer gets its trial first; meanwhile b carries the load.
	if h, trial, _ := p.Pick(); h != "a:1" || !trial {
		t.Fatalf("pick = %s trial %v, want the trial of a:1", h, trial)
	}
	if h, trial, _ := p.Pick(); h != "b:1" || trial {
		t.Fatalf("pick during the trial = %s trial %v, want b:1", h, trial)
	}
	p.Result("a:1", errDial) // the trial failed
	for range 3 {
		p.Result("b:1", errDial)
	}
	if quarantines != 3 {
		t.Fatalf("quarantines = %d, want 3", quarantines)
	}
	clk.Step(QuarantineDuration)
	if h, trial, _ := p.Pick(); h != "a:1" || !trial {
		t.Fatalf("after 20 s: %q %v, want the trial of a:1", h, trial)
	}
	if h, trial, _ := p.Pick(); h != "b:1" || !trial {
		t.Fatalf("after 20 s: %q %v, want the trial of b:1", h, trial)
	}
	p.Result("a:1", errDial)
	p.Result("b:1", errDial)
	clk.Step(QuarantineDuration)
	if _, _, reason := p.Pick(); reason != "" {
		t.Fatalf("a's trial: %q", reason)
	}
	h, trial, reason := p.Pick()
	if h != "b:1" || !trial || reason != "" {
		t.Fatalf("pick = %q trial %v reason %q, want the trial of b:1", h, trial, reason)
	}
	// One trial at a time: the next caller fails fast.
	if _, _, reason := p.Pick(); reason != reasonAllQuarantined {
		t.Fatalf("second pick during the trial: reason %q, want all_quarantined", reason)
	}
	// A failed trial quarantines again for the full duration.
	p.Result("a:1", errDial)
	if st, _ := p.State("a:1"); st != PeerQuarantined || quarantines != 6 {
		t.Fatalf("after failed trial: %s, quarantines %d", st, quarantines)
	}
	clk.Step(QuarantineDuration)
	h, trial, _ = p.Pick()
	if h != "a:1" || !trial {
		t.Fatalf("second trial: %q %v", h, trial)
	}
	p.Result("a:1", nil)
	if st, _ := p.State("a:1"); st != PeerHealthy {
		t.Fatalf("after good trial: %s", st)
	}
	if h, trial, _ := p.Pick(); h != "a:1" || trial {
		t.Fatalf("pick after recovery = %q trial %v", h, trial)
	}
}

func TestPeersReleaseTrial(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	p := NewPeers(clk, []string{"a:1"})
	for range QuarantineThreshold {
		p.Result("a:1", errDial)
	}
	clk.Step(QuarantineDuration)
	if _, trial, _ := p.Pick(); !trial {
		t.Fatal("want a trial")
	}
	p.ReleaseTrial("a:1")
	if _, trial, reason := p.Pick(); !trial || reason != "" {
		t.Fatalf("released trial not available again: %v %q", trial, reason)
	}
}

func TestPeersStaleness(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	p := NewPeers(clk, []string{"a:1"})
	// Publications long ago do not make the list stale; only a dropped
	// watch starts the clock.
	clk.Step(10 * time.Minute)
	if _, _, reason := p.Pick(); reason != "" {
		t.Fatalf("reason %q before any drop", reason)
	}
	p.WatchDropped()
	clk.Step(StaleAfter / 2)
	p.WatchDropped() // a second drop does not restart the clock
	clk.Step(StaleAfter/2 - time.Millisecond)
	if _, _, reason := p.Pick(); reason != "" {
		t.Fatalf("reason %q before 60 s", reason)
	}
	clk.Step(time.Millisecond)
	if _, _, reason := p.Pick(); reason != reasonStalePeers {
		t.Fatalf("reason %q at 60 s, want stale_peers", reason)
	}
	p.Publish([]string{"a:1", "b:1"})
	if _, _, reason := p.Pick(); reason != "" {
		t.Fatalf("reason %q after publish", reason)
	}
	p.Publish(nil)
	if _, _, reason := p.Pick(); reason != reasonNoPeer {
		t.Fatalf("reason %q with no peers, want no_peer", reason)
	}
}

func TestPeersKeepStateAcrossPublish(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	p := NewPeers(clk, []string{"a:1", "b:1"})
	for range QuarantineThreshold {
		p.Result("a:1", errDial)
	}
	p.Publish([]string{"b:1", "a:1"})
	if st, _ := p.State("a:1"); st != PeerQuarantined {
		t.Fatalf("republished peer lost its quarantine: %s", st)
	}
}
