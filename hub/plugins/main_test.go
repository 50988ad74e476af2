package plugins

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Real plugin binaries, built once for the package: the SDK's example
// provider (manifest name "example") and testprovider named "second".
var exampleBin, secondBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wharf-plugins-test-")
	if err != nil {
		panic(err)
	}
	exampleBin = filepath.Join(dir, "example")
	secondBin = filepath.Join(dir, "second")
	builds := [][]string{
		{"build", "-o", exampleBin, "github.com/wharfhub/wharf/sdk/internal/exampleprovider"},
		{"build", "-o", secondBin, "-ldflags", "-X main.name=second", "github.com/wharfhub/wharf/hub/plugins/internal/testprovider"},
	}
	for _, args := range builds {
		if out, err := exec.Command(goTool(), args...).CombinedOutput(); err != nil {
			_ = os.RemoveAll(dir)
			panic("go " + args[len(args)-1] + ": " + err.Error() + "\n" + string(out))
		}
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func goTool() string {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); checkExecutable(p) == nil {
		return p
	}
	return "go"
}

// testSupervision is fast enough for tests; nothing asserts on it.
func testSupervision() Supervision {
	s := DefaultSupervision()
	s.HealthInterval = 100 * time.Millisecond
	s.BackoffInitial = 10 * time.Millisecond
	s.BackoffMax = 50 * time.Millisecond
	s.ExitPoll = 20 * time.Millisecond
	return s
}

// runHost starts a Host under parent (which carries the test's logger) and returns it with a stop func that cancels Run
// and waits for it; stop also runs at cleanup.
func runHost(t *testing.T, parent context.Context, cfg Config) (*Host, func()) {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	if cfg.Supervision == (Supervision{}) {
		cfg.Supervision = testSupervision()
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(parent)
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(stop)
	return h, stop
}

// waitFor polls cond with a bound generous enough never to trip on a
// loaded machine; it asserts an outcome, not a timing.
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

func waitState(t *testing.T, h *Host, name string, want State) Status {
	t.Helper()
	var st Status
	waitFor(t, name+" "+string(want), func() bool {
		st, _ = h.Status(name)
		return st.State == want
	})
	return st
}

// get sends GET path through the named provider's transport and decodes
// the JSON answer.
func get(t *testing.T, h *Host, name, path string) map[string]any {
	t.Helper()
	rt, ok := h.Transport(name)
	if !ok {
		t.Fatalf("no transport for %s", name)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://provider"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		t.Fatalf("GET %s %s: %v", name, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s %s: %d %s", name, path, resp.StatusCode, body)
	}
	var out map[string]any
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("GET %s %s: %v: %s", name, path, err, body)
	}
	return out
}

// processAlive treats zombies as dead: an orphan reparented to a PID 1
// that does not reap still holds its pid but runs nothing.
func processAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err == nil {
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
			return b[i+2] != 'Z' && b[i+2] != 'X'
		}
		return true
	}
	if errors.Is(err, os.ErrNotExist) {
		if _, statErr := os.Stat("/proc/self/stat"); statErr == nil {
			return false
		}
	}
	return syscall.Kill(pid, 0) == nil
}
