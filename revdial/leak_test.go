package revdial

import (
	"bytes"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// noLeaks fails the test if goroutines started during it are still running
// when it ends. It compares goroutine ids rather than counts, so goroutines
// that the runtime or earlier tests left behind do not mask a leak, and it
// retries for a while because closed connections unwind asynchronously.
// Call it first in a test so that its cleanup runs last.
func noLeaks(t testing.TB) {
	t.Helper()
	before := goroutines()
	t.Cleanup(func() {
		var extra map[int]string
		for try := 0; try < 100; try++ {
			extra = map[int]string{}
			for id, stack := range goroutines() {
				if _, ok := before[id]; !ok && !ignorable(stack) {
					extra[id] = stack
				}
			}
			if len(extra) == 0 {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		var b strings.Builder
		for _, s := range extra {
			b.WriteString(s)
			b.WriteString("\n\n")
		}
		t.Errorf("%d goroutine(s) leaked:\n%s", len(extra), b.String())
	})
}

// ignorable skips the goroutine doing the check and runtime helpers.
func ignorable(stack string) bool {
	return strings.Contains(stack, "revdial.noLeaks") ||
		strings.Contains(stack, "testing.(*T).Run") ||
		strings.Contains(stack, "testing.tRunner.func1") ||
		strings.Contains(stack, "runtime.ensureSigM") ||
		strings.Contains(stack, "os/signal.signal_recv")
}

func goroutines() map[int]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[int]string{}
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		// "goroutine 123 [running]:"
		f := strings.Fields(string(g))
		if len(f) < 2 || f[0] != "goroutine" {
			continue
		}
		id, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		out[id] = string(g)
	}
	return out
}
