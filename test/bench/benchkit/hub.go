package benchkit

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Options configure StartHub.
type Options struct {
	// Bin is the path of the wharf-hub binary.
	Bin string
	// DirPrefix is the prefix of the hub's temp dir; "wharf-bench-" if empty.
	DirPrefix string
	// TokenFile, if not empty, is the content of a static token file (CSV
	// lines token,user,uid,"groups"). It is written into the hub's temp dir
	// and passed as --token-auth-file.
	TokenFile string
	// QPS and Burst are the client rate limits of configs from Config.
	QPS   float32
	Burst int
	// Args are extra wharf-hub flags, e.g. --provider.
	Args []string
}

// Hub is one running wharf-hub process with its own temp dir and embedded
// etcd, listening on a free loopback port.
type Hub struct {
	dir     string
	url     string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	exitErr error
	admin   *rest.Config // hub admin (system:masters), host is the hub URL
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

// StartHub starts o.Bin in a fresh temp dir and waits until /readyz answers
// ok. The caller must call Stop, which also removes the temp dir.
func StartHub(ctx context.Context, o Options) (*Hub, error) {
	prefix := o.DirPrefix
	if prefix == "" {
		prefix = "wharf-bench-"
	}
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	h, err := start(dir, o)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := h.waitReady(ctx, 2*time.Minute, o.QPS, o.Burst); err != nil {
		tail := h.LogTail(30)
		h.Stop()
		return nil, fmt.Errorf("wharf-hub not ready: %w\n%s", err, tail)
	}
	return h, nil
}

// start writes the hub's files into dir and starts the process.
func start(dir string, o Options) (*Hub, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	h := &Hub{dir: dir, url: fmt.Sprintf("https://127.0.0.1:%d", port), logPath: filepath.Join(dir, "hub.log"), exited: make(chan struct{})}
	dataDir := filepath.Join(dir, "data")
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	args := []string{"--shutdown-delay=0", "--data-dir", dataDir, "--secure-port", strconv.Itoa(port), "--bind-address", "127.0.0.1"}
	if o.TokenFile != "" {
		tokenFile := filepath.Join(dir, "tokens.csv")
		if err := os.WriteFile(tokenFile, []byte(o.TokenFile), 0o600); err != nil {
			return nil, fmt.Errorf("token file: %w", err)
		}
		args = append(args, "--token-auth-file", tokenFile)
	}
	args = append(args, o.Args...)
	logf, err := os.Create(h.logPath)
	if err != nil {
		return nil, fmt.Errorf("hub log: %w", err)
	}
	// Not CommandContext: Stop sends SIGINT and waits instead of killing.
	h.cmd = exec.Command(o.Bin, args...)
	h.cmd.Stdout, h.cmd.Stderr = logf, logf
	if err := h.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", o.Bin, err)
	}
	go func() {
		h.exitErr = h.cmd.Wait()
		logf.Close()
		close(h.exited)
	}()
	return h, nil
}

// waitReady waits for the admin kubeconfig and then for /readyz.
func (h *Hub) waitReady(ctx context.Context, timeout time.Duration, qps float32, burst int) error {
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
			cfg.QPS, cfg.Burst = qps, burst
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
