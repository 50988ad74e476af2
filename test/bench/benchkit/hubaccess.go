package benchkit

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// URL returns the hub's base URL, https://127.0.0.1:<port>.
func (h *Hub) URL() string { return h.url }

// Pid is the hub process's id.
func (h *Hub) Pid() int { return h.cmd.Process.Pid }

// DataDir is the hub's --data-dir; its serving certificate and key are in
// pki/serving.crt and pki/serving.key.
func (h *Hub) DataDir() string { return filepath.Join(h.dir, "data") }

// Config returns the hub admin's (group system:masters) rest config for the
// workspace at path or id ws, or for the hub URL itself if ws is empty.
func (h *Hub) Config(ws string) *rest.Config {
	cfg := rest.CopyConfig(h.admin)
	cfg.Host = h.host(ws)
	return cfg
}

// ConfigWithToken returns a rest config for the workspace ws (the hub URL
// if ws is empty) that authenticates with bearer token and trusts the same
// CA as the admin's. It carries no client rate limits.
func (h *Hub) ConfigWithToken(ws, token string) *rest.Config {
	return &rest.Config{
		Host:            h.host(ws),
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: h.admin.CAFile, CAData: h.admin.CAData, ServerName: h.admin.ServerName, Insecure: h.admin.Insecure},
		Timeout:         h.admin.Timeout,
	}
}

func (h *Hub) host(ws string) string {
	if ws == "" {
		return h.url
	}
	return h.url + "/clusters/" + ws
}

// RSSKiB reads VmRSS of the hub process from /proc.
func (h *Hub) RSSKiB() (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", h.cmd.Process.Pid))
	if err != nil {
		return 0, fmt.Errorf("open status: %w", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse VmRSS %q: %w", v, err)
			}
			return n, nil
		}
	}
	if err := s.Err(); err != nil {
		return 0, fmt.Errorf("read status: %w", err)
	}
	return 0, errors.New("no VmRSS in /proc status")
}

// LogTail returns the last n lines of the hub's log (its stdout and stderr).
func (h *Hub) LogTail(n int) string {
	b, err := os.ReadFile(h.logPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Annotate returns err with the hub's state (still running, or its exit
// error if it exits within 3s) and the last 60 lines of its log appended.
func (h *Hub) Annotate(err error) error {
	state := "still running"
	select {
	case <-h.exited:
		state = fmt.Sprintf("exited: %v", h.exitErr)
	case <-time.After(3 * time.Second):
	}
	return fmt.Errorf("%w\nhub %s; its log ends:\n%s", err, state, h.LogTail(60))
}

// Stop sends SIGINT, waits for the hub to exit (killing it after 30s) and
// removes its temp dir.
func (h *Hub) Stop() {
	if h.cmd != nil && h.cmd.Process != nil {
		_ = h.cmd.Process.Signal(os.Interrupt)
		select {
		case <-h.exited:
		case <-time.After(30 * time.Second):
			_ = h.cmd.Process.Kill()
			<-h.exited
		}
	}
	_ = os.RemoveAll(h.dir)
}
