package main

import (
	"context"
	"crypto/rand"
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

// hubProc is one running wharf-hub process with its own temp dir, embedded
// etcd and static token file.
type hubProc struct {
	dir        string
	url        string
	cmd        *exec.Cmd
	logPath    string
	exited     chan struct{}
	exitErr    error
	admin      *rest.Config // hub admin (system:masters), host is the hub URL
	aliceToken string
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

// startHub starts bin in a fresh temp dir with a token file for alice and
// waits until /readyz answers ok. The caller must call stop, which also
// removes the temp dir.
func startHub(ctx context.Context, bin string) (h *hubProc, err error) {
	dir, err := os.MkdirTemp("", "wharf-bench-rbac-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	defer func() {
		if err != nil && (h == nil || h.cmd == nil || h.cmd.Process == nil) {
			_ = os.RemoveAll(dir)
		}
	}()
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	h = &hubProc{dir: dir, url: fmt.Sprintf("https://127.0.0.1:%d", port), logPath: filepath.Join(dir, "hub.log"),
		exited: make(chan struct{}), aliceToken: rand.Text()}
	tokenFile := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(h.aliceToken+`,alice,alice,"bench-users"`+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	dataDir := filepath.Join(dir, "data")
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	logf, err := os.Create(h.logPath)
	if err != nil {
		return nil, fmt.Errorf("hub log: %w", err)
	}
	// Not CommandContext: stop sends SIGINT and waits instead of killing.
	h.cmd = exec.Command(bin, "--data-dir", dataDir, "--secure-port", strconv.Itoa(port),
		"--bind-address", "127.0.0.1", "--token-auth-file", tokenFile)
	h.cmd.Stdout, h.cmd.Stderr = logf, logf
	if err := h.cmd.Start(); err != nil {
		logf.Close()
		h.cmd = nil
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		h.exitErr = h.cmd.Wait()
		logf.Close()
		close(h.exited)
	}()
	if err := h.waitReady(ctx, 2*time.Minute); err != nil {
		tail := h.logTail(30)
		h.stop()
		return nil, fmt.Errorf("wharf-hub not ready: %w\n%s", err, tail)
	}
	return h, nil
}

// waitReady waits for the admin kubeconfig and then for /readyz.
func (h *hubProc) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
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
		if h.admin == nil {
			if _, err := os.Stat(filepath.Join(h.dir, "data", "admin-token")); err != nil {
				last = err
				continue
			}
			cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(h.dir, "data", "admin.kubeconfig"))
			if err != nil {
				last = fmt.Errorf("load kubeconfig: %w", err)
				continue
			}
			cfg.QPS, cfg.Burst = 2000, 2000
			cfg.Timeout = 2 * time.Minute
			cfg.Host = h.url
			if hc, err = rest.HTTPClientFor(cfg); err != nil {
				return fmt.Errorf("http client: %w", err)
			}
			h.admin = cfg
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

// config returns the admin's rest config for the workspace at path ws.
func (h *hubProc) config(ws string) *rest.Config {
	cfg := rest.CopyConfig(h.admin)
	cfg.Host = h.url + "/clusters/" + ws
	return cfg
}

// aliceConfig returns a rest config for the hub URL that authenticates as
// alice with her static token and trusts the same CA as the admin's.
func (h *hubProc) aliceConfig() *rest.Config {
	return &rest.Config{
		Host:            h.url,
		BearerToken:     h.aliceToken,
		TLSClientConfig: rest.TLSClientConfig{CAFile: h.admin.CAFile, CAData: h.admin.CAData, ServerName: h.admin.ServerName, Insecure: h.admin.Insecure},
		Timeout:         h.admin.Timeout,
	}
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
// temp dir.
func (h *hubProc) stop() {
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
