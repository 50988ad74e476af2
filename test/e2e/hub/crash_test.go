package hub

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childPids lists the hub's child processes from /proc, across all its
// threads (a child belongs to the thread that forked it).
func childPids(t *testing.T, pid int) []int {
	t.Helper()
	files, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread exited meanwhile
		}
		for _, field := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(field); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// pluginPid finds the hub's child running binary bin; 0 if none runs now.
func (c *contractHub) pluginPid(t *testing.T, bin string) int {
	t.Helper()
	want, err := filepath.EvalSymlinks(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range childPids(t, c.cmd.Process.Pid) {
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == want && processRunning(pid) {
			return pid
		}
	}
	return 0
}

// processRunning is false for a zombie, whose sockets are already closed.
func processRunning(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

var restartsMetric = regexp.MustCompile(`(?m)^wharf_provider_restarts_total\{provider="hello"\} (\d+)`)

func (c *contractHub) helloRestarts(t *testing.T) int {
	t.Helper()
	code, body, err := c.get("/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("/metrics = %d %v", code, err)
	}
	m := restartsMetric.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("/metrics has no wharf_provider_restarts_total for hello")
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// testCrash kills the sample provider mid-stream: the stream ends instead
// of hanging, the hub stays up and answers 503 with Retry-After and a
// Status while the provider is down, then the restarted provider serves
// and the restart is counted.
func testCrash(t *testing.T, c *contractHub) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	before := c.helloRestarts(t)
	pid := c.pluginPid(t, c.helloBin)
	if pid == 0 {
		t.Fatalf("no hello plugin among the hub's children %v", childPids(t, c.cmd.Process.Pid))
	}
	resp := openStream(ctx, t, c, "/services/providers/hello/events") // endless
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	for i := 1; i <= 2; i++ {
		if id, _, err := sseEvent(r); err != nil || id != fmt.Sprint(i) {
			t.Fatalf("event %d before the crash: id %q err %v", i, id, err)
		}
	}
	ended := make(chan error, 1)
	go func() {
		for {
			if _, _, err := sseEvent(r); err != nil {
				ended <- err
				return
			}
		}
	}()

	// Kill until a request lands in the gap before the restart; the gap is
	// the supervisor's exit poll plus its jittered backoff, so the first
	// kill all but always suffices.
	saw503 := false
	for attempt := 0; attempt < 3 && !saw503; attempt++ {
		if attempt > 0 {
			eventually(t, time.Minute, func() error {
				if pid = c.pluginPid(t, c.helloBin); pid == 0 {
					return fmt.Errorf("hello not running again")
				}
				return nil
			})
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill %d: %v", pid, err)
		}
		eventually(t, time.Minute, func() error {
			if processRunning(pid) {
				return fmt.Errorf("plugin %d still running", pid)
			}
			return nil
		})
		code, hdr, body := c.do(t, aliceToken, http.MethodGet, "/services/providers/hello/whoami", http.Header{"X-Wharf-Workspace": {"root:prov"}})
		if code == http.StatusOK {
			continue // already restarted: try again
		}
		saw503 = true
		if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" {
			t.Fatalf("while down: %d Retry-After %q %s", code, hdr.Get("Retry-After"), body)
		}
		var st struct {
			Kind, Reason string
			Code         int
		}
		if err := json.Unmarshal([]byte(body), &st); err != nil || st.Kind != "Status" || st.Code != 503 || st.Reason != "ServiceUnavailable" {
			t.Errorf("while down: body %s (%v), want a 503 Status", body, err)
		}
	}
	if !saw503 {
		t.Fatal("the provider was back before any request could see it down, three times")
	}

	// The hub aborts the response it can no longer complete: over
	// HTTP/1.1 the client reads an unexpected EOF (no final chunk), so it
	// can tell a cut stream from a finished one, and never hangs.
	select {
	case err := <-ended:
		if ctx.Err() != nil || !(errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
			t.Fatalf("stream after the crash ended with %v, want EOF", err)
		}
		t.Logf("stream ended after the crash: %v", err)
	case <-ctx.Done():
		t.Fatal("the stream did not end after its provider was killed")
	}
	if code, body, err := c.get("/readyz"); err != nil || code != http.StatusOK {
		t.Fatalf("hub after the crash: /readyz %d %s %v", code, body, err)
	}
	eventually(t, time.Minute, func() error {
		code, body := c.call(t, aliceToken, "/services/providers/hello/whoami", http.Header{"X-Wharf-Workspace": {"root:prov"}})
		if code != http.StatusOK || !strings.Contains(body, `"User":"alice"`) {
			return fmt.Errorf("whoami after restart: %d %s", code, body)
		}
		return nil
	})
	if now := c.pluginPid(t, c.helloBin); now == 0 || now == pid {
		t.Errorf("serving pid %d, killed %d: want a new process", now, pid)
	}
	eventually(t, time.Minute, func() error {
		if n := c.helloRestarts(t); n <= before {
			return fmt.Errorf("wharf_provider_restarts_total{provider=\"hello\"} = %d, was %d", n, before)
		}
		return nil
	})
	// The catalog tells the same story to anyone who may read it.
	eventually(t, time.Minute, func() error {
		out, err := c.kubectl("root", "get", "catalogentry", "hello", "-o", "jsonpath={.status.restartCount} {.status.conditions[?(@.type==\"Ready\")].status}")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		var n int
		var ready string
		if _, err := fmt.Sscan(out, &n, &ready); err != nil || n < 1 || ready != "True" {
			return fmt.Errorf("CatalogEntry hello: restartCount and Ready = %q, want >= 1 and True", out)
		}
		return nil
	})
}
