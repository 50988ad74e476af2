package agent

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhub/wharf/revdial"
)

// TestRotationRevocationAndRejoin: a credential rotated in the 101 is saved
// and used from then on (also after a restart); a revoked credential keeps
// the agent retrying at the longest backoff with one log line, not one per
// attempt; re-running with a fresh bundle for the re-created edge joins
// again with its token.
func TestRotationRevocationAndRejoin(t *testing.T) {
	hub := newTestHub(t, "c0ffee0000000002", "web")
	rec := newRecorder(t)
	dir := filepath.Join(t.TempDir(), "state")
	credPath := filepath.Join(dir, credentialFile)

	stop, lg := runAgent(t, Config{StateDir: dir, Join: hub.bundle("kubernetes", "tok-a"), RestConfig: rec.restConfig()})
	<-hub.dialers
	hub.mu.Lock()
	hub.rotateTo = "cred-rotated"
	d := hub.lastAgent
	hub.mu.Unlock()
	d.Close() // the agent reconnects and is handed the rotated credential
	eventually(t, "the rotated credential on disk", func() bool {
		return strings.TrimSpace(readFile(t, credPath)) == "cred-rotated"
	})
	// It connects with the rotated one (the old one no longer works).
	hub.mu.Lock()
	d = hub.lastAgent
	hub.mu.Unlock()
	d.Close()
	eventually(t, "a connect with the rotated credential", func() bool {
		hub.mu.Lock()
		defer hub.mu.Unlock()
		last := hub.connects[len(hub.connects)-1]
		return last.Get("Authorization") == "Bearer cred-rotated" && hub.lastAgent != d
	})
	if code, _ := getAs(t, hub.httpClient(), "/api", "alice"); code != 200 {
		t.Fatalf("after rotation: %d", code)
	}
	if s := lg.String(); strings.Contains(s, "cred-rotated") || strings.Contains(s, "cred-1") {
		t.Fatalf("a credential was logged:\n%s", s)
	}

	// The Edge is deleted: the credential is refused from now on.
	hub.revokeAll()
	eventually(t, "several refused attempts", func() bool {
		return hub.stat(func(h *testHub) int { return h.refusals }) >= 4
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(lg.String(), "refused the agent credential"); n != 1 {
		t.Fatalf("the refusal was logged %d times, want once:\n%s", n, lg.String())
	}
	// A refusal waits the longest backoff; other failures use the
	// jittered schedule.
	tun := &tunnel{cfg: &Config{Backoff: testBackoff}}
	if delay, ok := tun.retryDelay(fmt.Errorf("control dial: %w", &revdial.HandshakeError{StatusCode: 401}), 0); !ok || delay != testBackoff.Max {
		t.Fatalf("retry delay after 401 = %v, %v", delay, ok)
	}
	if _, ok := tun.retryDelay(&revdial.HandshakeError{StatusCode: 502}, 0); ok {
		t.Fatal("a 502 is treated as a refusal")
	}

	// Re-created edge, fresh bundle, same state dir: the saved credential
	// is refused, so the bundle's token is exchanged and the agent is back.
	stop, lg = runAgent(t, Config{StateDir: dir, Join: hub.bundle("kubernetes", "tok-b"), RestConfig: rec.restConfig()})
	eventually(t, "the re-join", func() bool { return hub.stat(func(h *testHub) int { return h.joins }) == 2 })
	if code, _ := getAs(t, hub.httpClient(), "/api", "alice"); code != 200 {
		t.Fatalf("after re-join: %d", code)
	}
	if got := strings.TrimSpace(readFile(t, credPath)); got != "cred-2-of-web" {
		t.Fatalf("credential after re-join %q", got)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(lg.String(), "tok-b") {
		t.Fatalf("the token was logged:\n%s", lg.String())
	}
}
