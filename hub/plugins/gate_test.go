package plugins

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// testGate hands the right to run over when the test says so; package
// leases implements the real one against a Lease (tested there and in the
// two-replica end-to-end test).
type testGate struct{ grant, revoke chan struct{} }

func (g testGate) Run(ctx context.Context, _ string, lead func(context.Context), observe func(string)) {
	observe("other")
	select {
	case <-ctx.Done():
		return
	case <-g.grant:
	}
	observe("self")
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-g.revoke:
		case <-lctx.Done():
		}
		cancel()
	}()
	lead(lctx)
	observe("other")
	<-ctx.Done()
}

// processesOf lists the pids running the given binary.
func processesOf(t *testing.T, bin string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || exe != bin {
			continue
		}
		var pid int
		for _, c := range e.Name() {
			pid = pid*10 + int(c-'0')
		}
		if processAlive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// A replicas: single provider runs only while the Gate grants it; other
// providers run regardless; Holder reports who runs what.
func TestHostGate(t *testing.T) {
	g := testGate{grant: make(chan struct{}), revoke: make(chan struct{})}
	h, stop := runHost(t, context.Background(), Config{
		Specs:   []Spec{{Name: "example", Path: exampleBin}, {Name: "second", Path: secondBin}},
		Replica: "self",
		Gate:    g,
	})
	waitState(t, h, "second", StateRunning)
	st := waitState(t, h, "example", StateStandby)
	if st.Descriptor == nil || st.Pid != 0 {
		t.Fatalf("standby status %+v", st)
	}
	waitFor(t, "holder observed", func() bool { hd, ok := h.Holder("example"); return ok && hd == "other" })
	if _, ok := h.Transport("example"); ok {
		t.Fatal("standby provider has a transport")
	}
	// The manifest probe is gone: no example process runs here.
	waitFor(t, "no example process", func() bool { return len(processesOf(t, exampleBin)) == 0 })
	if hd, ok := h.Holder("second"); !ok || hd != "self" {
		t.Fatalf("Holder(second) = %q %v", hd, ok)
	}

	close(g.grant)
	st = waitState(t, h, "example", StateRunning)
	if hd, _ := h.Holder("example"); hd != "self" {
		t.Fatalf("Holder(example) = %q", hd)
	}
	if pids := processesOf(t, exampleBin); len(pids) != 1 || pids[0] != st.Pid {
		t.Fatalf("example processes %v, status pid %d", pids, st.Pid)
	}
	get(t, h, "example", "/services/whoami")

	close(g.revoke)
	// A lost Gate is counted as such (wharf_provider_lease_losses_total),
	// not as a restart.
	if lost := waitState(t, h, "example", StateStandby); lost.LeaseLosses != 1 || lost.Restarts != 0 {
		t.Fatalf("after losing the gate: %d lease losses, %d restarts; want 1 and 0", lost.LeaseLosses, lost.Restarts)
	}
	if processAlive(st.Pid) {
		t.Fatalf("example pid %d still alive after losing the gate", st.Pid)
	}
	if _, ok := h.Transport("example"); ok {
		t.Fatal("transport kept after losing the gate")
	}
	stop()
	for _, name := range []string{"example", "second"} {
		if st, _ := h.Status(name); st.State != StateStopped {
			t.Errorf("%s after stop: %s", name, st.State)
		}
	}
}
