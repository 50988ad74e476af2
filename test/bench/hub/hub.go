package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// hubProc is one running wharf-hub process with its own data dir and
// embedded etcd.
type hubProc struct {
	dataDir string
	url     string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	exitErr error
	base    *rest.Config
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("listen for free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startHub starts bin in a fresh temp data dir and waits until /readyz
// answers ok. The caller must call stop, which also removes the data dir.
func startHub(ctx context.Context, bin string, qps float32, burst int) (*hubProc, error) {
	dir, err := os.MkdirTemp("", "wharf-bench-hub-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	port, err := freePort()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	h := &hubProc{dataDir: dir, url: fmt.Sprintf("https://127.0.0.1:%d", port), logPath: filepath.Join(dir, "hub.log"), exited: make(chan struct{})}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("data dir: %w", err)
	}
	logf, err := os.Create(h.logPath)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("hub log: %w", err)
	}
	// Not CommandContext: stop sends SIGINT and waits instead of killing.
	h.cmd = exec.Command(bin, "--data-dir", filepath.Join(dir, "data"), "--secure-port", strconv.Itoa(port), "--bind-address", "127.0.0.1")
	h.cmd.Stdout, h.cmd.Stderr = logf, logf
	if err := h.cmd.Start(); err != nil {
		logf.Close()
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		h.exitErr = h.cmd.Wait()
		logf.Close()
		close(h.exited)
	}()
	if err := h.waitReady(ctx, 2*time.Minute, qps, burst); err != nil {
		tail := h.logTail(30)
		h.stop()
		return nil, fmt.Errorf("wharf-hub not ready: %w\n%s", err, tail)
	}
	return h, nil
}

// waitReady waits for the admin kubeconfig and then for /readyz.
func (h *hubProc) waitReady(ctx context.Context, timeout time.Duration, qps float32, burst int) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	kubeconfig := filepath.Join(h.dataDir, "data", "admin.kubeconfig")
	var last error
	var hc *http.Client
	for {
		select {
		case <-h.exited:
			return fmt.Errorf("hub exited early: %w", h.exitErr)
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
		if h.base == nil {
			if _, err := os.Stat(filepath.Join(h.dataDir, "data", "admin-token")); err != nil {
				last = err
				continue
			}
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				last = fmt.Errorf("load kubeconfig: %w", err)
				continue
			}
			cfg.QPS, cfg.Burst = qps, burst
			cfg.Timeout = 2 * time.Minute
			cfg.Host = h.url
			if hc, err = rest.HTTPClientFor(cfg); err != nil {
				return fmt.Errorf("http client: %w", err)
			}
			h.base = cfg
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.url+"/readyz", nil)
		if err != nil {
			return fmt.Errorf("readyz request: %w", err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			last = err
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		last = fmt.Errorf("readyz: %s", resp.Status)
	}
}

// config returns a rest config for the workspace at path or id ws.
func (h *hubProc) config(ws string) *rest.Config {
	cfg := rest.CopyConfig(h.base)
	cfg.Host = h.url + "/clusters/" + ws
	return cfg
}

// rssKiB reads VmRSS of the hub process from /proc.
func (h *hubProc) rssKiB() (int64, error) {
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

// logTail returns the last n lines of the hub log.
func (h *hubProc) logTail(n int) string {
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

// stop sends SIGINT, waits for exit (killing after 30s) and removes the
// data dir.
func (h *hubProc) stop() {
	if h.cmd.Process != nil {
		_ = h.cmd.Process.Signal(os.Interrupt)
		select {
		case <-h.exited:
		case <-time.After(30 * time.Second):
			_ = h.cmd.Process.Kill()
			<-h.exited
		}
	}
	_ = os.RemoveAll(h.dataDir)
}
