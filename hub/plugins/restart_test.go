package plugins

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// A plugin that dies before the handshake is a transient failure: it is
// restarted with backoff, never marked Failed, and what it printed on the
// way down reaches the hub's log under its provider name.
func TestHostRestartsCrashingPlugin(t *testing.T) {
	// Passed through explicitly: IsolateEnv would otherwise keep it out,
	// which is the point of the isolation.
	t.Setenv("WHARF_EXAMPLE_CRASH", "early")
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	logs := logger.GetSink().(ktesting.Underlier).GetBuffer()
	h, stop := runHost(t, klog.NewContext(context.Background(), logger), Config{
		Specs:   []Spec{{Name: "example", Path: exampleBin}, {Name: "second", Path: secondBin}},
		PassEnv: []string{"PATH", "WHARF_EXAMPLE_CRASH"},
	})
	waitFor(t, "two restarts", func() bool {
		st, _ := h.Status("example")
		return st.Restarts >= 2
	})
	st, _ := h.Status("example")
	if st.State == StateFailed || st.State == StateRunning || st.LastError == "" {
		t.Errorf("crashing plugin: %+v", st)
	}
	// The backoff is visible: every restart scheduled the next launch.
	waitFor(t, "a restart's next launch time", func() bool {
		st, _ := h.Status("example")
		return st.State == StateRestarting && !st.NextStart.IsZero() && !st.NextStart.Before(st.Since)
	})
	waitState(t, h, "second", StateRunning)
	if st, _ := h.Status("second"); !st.NextStart.IsZero() {
		t.Errorf("a running plugin has a next start: %v", st.NextStart)
	}
	waitFor(t, "crash output in the log", func() bool {
		return strings.Contains(logs.String(), "crashing early on purpose")
	})
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "crashing early on purpose") && !strings.Contains(line, `provider="example"`) {
			t.Errorf("plugin output logged without provider key: %s", line)
		}
	}
	stop()
	if st, _ := h.Status("example"); st.State != StateStopped {
		t.Errorf("after shutdown: %s", st.State)
	}
}

// Subscribe channels close with their context, and a slow subscriber
// never blocks the supervisor: notifications coalesce.
func TestSubscribe(t *testing.T) {
	h, err := New(Config{DataDir: t.TempDir(), Supervision: testSupervision(), Specs: []Spec{{Name: "second", Path: secondBin}}})
	if err != nil {
		t.Fatal(err)
	}
	subCtx, unsubscribe := context.WithCancel(t.Context())
	ch := h.Subscribe(subCtx)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	waitState(t, h, "second", StateRunning) // several changes, nobody reading
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, ok := <-ch; !ok {
		t.Fatal("no pending notification")
	}
	unsubscribe()
	deadline := time.After(time.Minute)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("channel not closed after its context ended")
		}
	}
}

// A plugin that answers health pings with "unhealthy" is restarted after
// HealthFailures pings, and stays up once it is healthy again.
func TestHostRestartsUnhealthyPlugin(t *testing.T) {
	dataDir := t.TempDir()
	h, _ := runHost(t, context.Background(), Config{DataDir: dataDir, Specs: []Spec{{Name: "second", Path: secondBin}}})
	first := waitState(t, h, "second", StateRunning)
	sick := filepath.Join(dataDir, "providers", "second", "unhealthy")
	if err := os.WriteFile(sick, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var st Status
	waitFor(t, "a health-check restart", func() bool {
		st, _ = h.Status("second")
		return st.Restarts >= 1
	})
	if !strings.Contains(st.LastError, "health checks failed") || !strings.Contains(st.LastError, "unhealthy file present") {
		t.Errorf("last error %q, want the failed health checks and the plugin's reason", st.LastError)
	}
	if err := os.Remove(sick); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "running again in a new process", func() bool {
		st, _ = h.Status("second")
		return st.State == StateRunning && st.Pid != first.Pid
	})
	if processAlive(first.Pid) {
		t.Errorf("unhealthy plugin %d was not killed", first.Pid)
	}
}

// A plugin whose health check never returns (hung, not unhealthy) is
// restarted once HealthFailures pings timed out, and the hung process is
// killed.
func TestHostRestartsHungPlugin(t *testing.T) {
	dataDir := t.TempDir()
	sv := testSupervision()
	sv.HealthTimeout = 200 * time.Millisecond
	h, _ := runHost(t, context.Background(), Config{DataDir: dataDir, Supervision: sv, Specs: []Spec{{Name: "second", Path: secondBin}}})
	first := waitState(t, h, "second", StateRunning)
	hang := filepath.Join(dataDir, "providers", "second", "hang")
	if err := os.WriteFile(hang, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var st Status
	waitFor(t, "a restart of the hung plugin", func() bool {
		st, _ = h.Status("second")
		return st.Restarts >= 1
	})
	if !strings.Contains(st.LastError, "health checks failed") || !strings.Contains(st.LastError, "DeadlineExceeded") {
		t.Errorf("last error %q, want timed-out health checks", st.LastError)
	}
	if err := os.Remove(hang); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "running again in a new process", func() bool {
		st, _ = h.Status("second")
		return st.State == StateRunning && st.Pid != first.Pid
	})
	waitFor(t, "the hung process gone", func() bool { return !processAlive(first.Pid) })
}
