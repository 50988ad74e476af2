package agent

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/wharfhub/wharf/providers/edges/protocol"
)

// logs is a buffered logger for one agent run.
type logs struct{ ktesting.Underlier }

func newLogs(t *testing.T) (klog.Logger, logs) {
	l := ktesting.NewLogger(ktesting.NopTL{}, ktesting.NewConfig(ktesting.BufferLogs(true)))
	u := l.GetSink().(ktesting.Underlier)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("agent log:\n%s", u.GetBuffer().String())
		}
	})
	return l, logs{u}
}

func (l logs) String() string { return l.GetBuffer().String() }

// runAgent starts Run in the background and returns a stop function that
// waits for it and returns its error.
func runAgent(t *testing.T, cfg Config) (stop func() error, lg logs) {
	t.Helper()
	logger, lg := newLogs(t)
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	if cfg.Options == (testOptions) || cfg.Options.ReadDeadline == 0 {
		cfg.Options = testOptions
	}
	if cfg.Backoff.Max == 0 {
		cfg.Backoff = testBackoff
	}
	if cfg.Version == "" {
		cfg.Version = "v-test"
	}
	if cfg.Hostname == "" {
		cfg.Hostname = "edge-host"
	}
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()
	var stopped bool
	var err error
	stop = func() error {
		if !stopped {
			cancel()
			err = <-done
			stopped = true
		}
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop, lg
}

func getAs(t *testing.T, c *http.Client, path, user string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://edge"+path, nil)
	if user != "" {
		req.Header.Set(protocol.HeaderEdgeUser, user)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s through the tunnel: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// TestJoinThenRunFromState: the first run exchanges the token and saves
// state and credential with tight modes; the token is in no file and no
// log; re-running the join line does not spend a token; a later run needs
// only the state dir; a bundle for another edge is refused.
func TestJoinThenRunFromState(t *testing.T) {
	hub := newTestHub(t, "c0ffee0000000001", "lab")
	rec := newRecorder(t)
	dir := filepath.Join(t.TempDir(), "state")
	const token = "join-token-SECRET-1"
	join := hub.bundle("kubernetes", token)

	stop, lg := runAgent(t, Config{StateDir: dir, Join: join, RestConfig: rec.restConfig()})
	client := hub.httpClient()
	if code, body := getAs(t, client, "/api/v1/namespaces", "alice"); code != 200 {
		t.Fatalf("through the tunnel: %d %s", code, body)
	}
	if got := rec.last(t).Get("Impersonate-User"); got != "alice" {
		t.Fatalf("edge saw Impersonate-User %q", got)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	cred := "cred-1-of-lab"
	if got := strings.TrimSpace(readFile(t, filepath.Join(dir, credentialFile))); got != cred {
		t.Fatalf("saved credential %q, want %q", got, cred)
	}
	if m := mode(t, dir); m != 0o700 {
		t.Fatalf("state dir mode %o", m)
	}
	for _, f := range []string{credentialFile, stateFile} {
		if m := mode(t, filepath.Join(dir, f)); m != 0o600 {
			t.Fatalf("%s mode %o", f, m)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(readFile(t, filepath.Join(dir, e.Name())), token) {
			t.Fatalf("%s holds the join token", e.Name())
		}
	}
	if len(entries) != 2 {
		t.Fatalf("state dir holds %d files (a temp file left behind?)", len(entries))
	}
	if s := lg.String(); strings.Contains(s, token) || strings.Contains(s, cred) {
		t.Fatalf("the log holds a secret:\n%s", s)
	}
	hub.mu.Lock()
	hdr := hub.connects[len(hub.connects)-1]
	hub.mu.Unlock()
	if hdr.Get(protocol.HeaderAgentVersion) != "v-test" || hdr.Get(protocol.HeaderAgentHostname) != "edge-host" || hdr.Get(protocol.HeaderAgentSSHHostKey) != "" {
		t.Fatalf("control headers %v", hdr)
	}

	// The printed command again: no second exchange, the credential works.
	stop, _ = runAgent(t, Config{StateDir: dir, Join: join, RestConfig: rec.restConfig()})
	if code, _ := getAs(t, client, "/api", "alice"); code != 200 {
		t.Fatalf("re-run: %d", code)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// From the state dir alone.
	stop, _ = runAgent(t, Config{StateDir: dir, RestConfig: rec.restConfig()})
	if code, _ := getAs(t, client, "/api", "bob"); code != 200 {
		t.Fatalf("state-only run: %d", code)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := hub.stat(func(h *testHub) int { return h.joins }); n != 1 {
		t.Fatalf("%d token exchanges, want 1", n)
	}

	// Another edge's bundle on this state dir, and no state at all.
	other := newTestHub(t, "c0ffee0000000001", "other")
	err := Run(context.Background(), Config{StateDir: dir, Join: other.bundle("kubernetes", "t2"), RestConfig: rec.restConfig()})
	if err == nil || !strings.Contains(err.Error(), "belongs to edge") {
		t.Fatalf("foreign bundle: %v", err)
	}
	err = Run(context.Background(), Config{StateDir: filepath.Join(t.TempDir(), "st"), RestConfig: rec.restConfig()})
	if err == nil || !strings.Contains(err.Error(), "--join") {
		t.Fatalf("no state: %v", err)
	}
	// A wrong token never connects: a plain, final error without it.
	failedDir := filepath.Join(t.TempDir(), "st")
	err = Run(context.Background(), Config{StateDir: failedDir, Join: other.unmintedBundle("kubernetes", "wrong-SECRET"), RestConfig: rec.restConfig(), Backoff: testBackoff})
	if err == nil || !strings.Contains(err.Error(), "HTTP 401") || strings.Contains(err.Error(), "wrong-SECRET") {
		t.Fatalf("wrong token: %v", err)
	}
	if n := other.stat(func(h *testHub) int { return len(h.connects) }); n != 0 {
		t.Fatalf("a wrong token led to %d control handshakes", n)
	}
	// That failed join left no credential, so a bundle of another edge may
	// take its state dir over.
	stop, _ = runAgent(t, Config{StateDir: failedDir, Join: hub.bundle("kubernetes", "tok-takeover"), RestConfig: rec.restConfig()})
	if code, _ := getAs(t, client, "/api", "alice"); code != 200 {
		t.Fatalf("take-over of a failed state dir: %d", code)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
