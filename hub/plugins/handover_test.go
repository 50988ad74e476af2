package plugins

import (
	"context"
	"testing"
	"time"
)

// leadingGate grants at once, and follows "other" as holder after this
// replica gave the provider up.
type leadingGate struct{}

func (leadingGate) Run(ctx context.Context, _ string, lead func(context.Context), observe func(string)) {
	observe("self")
	lead(ctx)
}

func (leadingGate) Observe(ctx context.Context, _ string, observe func(string)) {
	observe("other")
	<-ctx.Done()
}

// Handover stops the replicas: single provider and returns once it is
// gone, then follows the new holder; the other providers keep running
// until the Host's context ends.
func TestHostHandover(t *testing.T) {
	h, stop := runHost(t, context.Background(), Config{
		Specs:   []Spec{{Name: "example", Path: exampleBin}, {Name: "second", Path: secondBin}},
		Replica: "self",
		Gate:    leadingGate{},
	})
	st := waitState(t, h, "example", StateRunning)
	waitState(t, h, "second", StateRunning)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.Handover(ctx); err != nil {
		t.Fatal(err)
	}
	if processAlive(st.Pid) {
		t.Fatalf("example pid %d alive after Handover returned", st.Pid)
	}
	// Stopped, or already Standby: the gate follows the new holder at
	// once, and the test cannot tell which it sees first.
	if got, _ := h.Status("example"); got.State != StateStopped && got.State != StateStandby {
		t.Fatalf("example after handover: %s, want Stopped or Standby", got.State)
	} else if got.LeaseLosses != 0 {
		t.Fatalf("a handover counted as %d lease losses", got.LeaseLosses)
	}
	if _, ok := h.Transport("example"); ok {
		t.Fatal("example keeps a transport after handover")
	}
	waitFor(t, "the new holder observed", func() bool { hd, ok := h.Holder("example"); return ok && hd == "other" })
	if got, _ := h.Status("second"); got.State != StateRunning {
		t.Fatalf("second after handover: %s, want it running until the hub stops", got.State)
	}
	// A second call has nothing left to wait for.
	if err := h.Handover(ctx); err != nil {
		t.Fatal(err)
	}
	stop()
	if got, _ := h.Status("second"); got.State != StateStopped {
		t.Fatalf("second after stop: %s", got.State)
	}
}
