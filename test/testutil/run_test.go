package testutil

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// TestRun runs a real shell: what it prints on each stream, what it read
// from stdin, the environment it saw and its exit status come back as
// they were.
func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name, stdin, script string
		env                 []string
		out, errOut         string
		code                int
	}{
		{name: "success", script: "echo out; echo err >&2", out: "out\n", errOut: "err\n"},
		{name: "exit status", script: "echo partial; exit 7", out: "partial\n", code: 7},
		{name: "stdin", stdin: "from stdin\n", script: "cat", out: "from stdin\n"},
		{name: "env added", env: []string{"WHARF_RUN_TEST=seen"}, script: `printf %s "$WHARF_RUN_TEST"`, out: "seen"},
		{name: "env overrides", env: []string{"HOME=/nowhere"}, script: `printf %s "$HOME"`, out: "/nowhere"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := Run(t, tc.env, tc.stdin, "/bin/sh", "-c", tc.script)
			if out != tc.out || errOut != tc.errOut || code != tc.code {
				t.Errorf("Run = %q, %q, %d; want %q, %q, %d", out, errOut, code, tc.out, tc.errOut, tc.code)
			}
		})
	}
}

// TestEventually: a condition that comes true is waited for; one that
// never does fails the test with its last error.
func TestEventually(t *testing.T) {
	calls := 0
	Eventually(t, time.Minute, func() error {
		if calls++; calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if calls != 3 {
		t.Errorf("cond called %d times, want 3", calls)
	}

	// A failing run is observed through a recorder, so this test passes.
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Eventually(rec, 0, func() error { return errors.New("never") })
	}()
	<-done
	if rec.msg != "condition not met within 0s: never" {
		t.Errorf("Eventually failed with %q", rec.msg)
	}
}

// fatalRecorder records Fatalf and ends the goroutine, as testing does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
