package hub

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"github.com/wharfhub/wharf/test/testutil"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/test/kube"
)

// hubOptions configure one hub process.
type hubOptions struct {
	dataDir     string   // default: a fresh temp dir
	etcdServers []string // default: embedded etcd
	extraArgs   []string
	port        int // default: a free port; set when the URL must be known before start
	nofile      int // when set: the hub runs under prlimit with this RLIMIT_NOFILE
}

// hubProc is a running wharf-hub.
type hubProc struct {
	t          *testing.T
	opts       hubOptions
	port       int
	URL        string
	Token      string
	Kubecfg    string
	kubectlBin string
	cmd        *exec.Cmd
	log        *testutil.Buffer
	// exited is closed when the process has exited; exitErr is then set.
	exited  chan struct{}
	exitErr error
}

func freePort(t *testing.T) int {
	t.Helper()
	return testutil.FreePort(t)
}

// startHub starts wharf-hub and waits until /readyz answers ok. The process
// is stopped when the test ends; its log is printed if the test failed.
func startHub(t *testing.T, opts hubOptions) *hubProc {
	t.Helper()
	if opts.dataDir == "" {
		opts.dataDir = t.TempDir()
	}
	h := &hubProc{t: t, opts: opts, kubectlBin: kube.KubectlPath(t)}
	h.start()
	t.Cleanup(func() {
		h.stop()
		if t.Failed() {
			t.Logf("wharf-hub log (%s):\n%s", h.URL, h.log.String())
		}
	})
	return h
}

func (h *hubProc) start() {
	t := h.t
	t.Helper()
	// freePort's port is only reserved until the hub binds it (embedded
	// etcd has no port: it serves a unix socket); on a shared machine
	// another process can take it first.
	// That is the harness's race, not the hub's, so it retries.
	for attempt := 1; ; attempt++ {
		err := h.startOnce()
		if err == nil {
			return
		}
		if attempt < 3 && strings.Contains(h.log.String(), "address already in use") {
			t.Logf("wharf-hub lost a port race, retrying: %v", err)
			continue
		}
		t.Fatalf("wharf-hub not ready: %v\n%s", err, h.log.String())
	}
}

func (h *hubProc) startOnce() error {
	t := h.t
	t.Helper()
	h.port = h.opts.port
	if h.port == 0 {
		h.port = freePort(t)
	}
	args := []string{"--shutdown-delay=0", "--data-dir", h.opts.dataDir, "--secure-port", fmt.Sprint(h.port), "--bind-address", "127.0.0.1"}
	if len(h.opts.etcdServers) > 0 {
		args = append(args, "--etcd-servers", strings.Join(h.opts.etcdServers, ","))
	}
	args = append(args, h.opts.extraArgs...)
	h.cmd = exec.Command(hubBinary(t), args...)
	if h.opts.nofile > 0 {
		h.cmd = exec.Command("prlimit", append([]string{fmt.Sprintf("--nofile=%d:%d", h.opts.nofile, h.opts.nofile), "--", hubBinary(t)}, args...)...)
	}
	h.log = &testutil.Buffer{}
	h.cmd.Stdout, h.cmd.Stderr = h.log, h.log
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	h.exited = exited
	cmd := h.cmd
	go func() { h.exitErr = cmd.Wait(); close(exited) }()
	h.URL = fmt.Sprintf("https://127.0.0.1:%d", h.port)
	h.Kubecfg = filepath.Join(h.opts.dataDir, "admin.kubeconfig")
	if err := h.waitReady(90 * time.Second); err != nil {
		h.stop()
		return err
	}
	return nil
}

func (h *hubProc) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-h.exited:
			return fmt.Errorf("exited early: %v", h.exitErr)
		default:
		}
		if tok, err := os.ReadFile(filepath.Join(h.opts.dataDir, "admin-token")); err == nil {
			h.Token = strings.TrimSpace(string(tok))
			code, body, err := h.get("/readyz")
			if err == nil && code == http.StatusOK {
				return nil
			}
			last = fmt.Errorf("readyz %d %s %v", code, body, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("timeout after %s: %v", timeout, last)
}

// stop sends SIGTERM and waits for a clean exit.
func (h *hubProc) stop() {
	if h.cmd == nil || h.cmd.Process == nil {
		return
	}
	_ = h.cmd.Process.Signal(os.Interrupt)
	select {
	case <-h.exited:
	case <-time.After(30 * time.Second):
		_ = h.cmd.Process.Kill()
		<-h.exited
	}
	h.cmd = nil
}

// restart stops the hub and starts it again on the same data dir and etcd.
func (h *hubProc) restart() {
	h.stop()
	h.start()
}

// client trusts the CA from the admin kubeconfig's data dir.
func (h *hubProc) client() *http.Client {
	pool := x509.NewCertPool()
	if pem, err := os.ReadFile(filepath.Join(h.opts.dataDir, "pki", "serving.crt")); err == nil {
		pool.AppendCertsFromPEM(pem)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// get performs an authenticated GET as the admin.
func (h *hubProc) get(path string) (int, string, error) {
	return h.getAs(h.Token, path)
}

// doAs sends one request with a bearer token and returns code and body.
func (h *hubProc) doAs(token, method, path, body string) (int, string) {
	req, err := http.NewRequest(method, h.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if method == http.MethodPatch {
		req.Header.Set("Content-Type", "application/merge-patch+json")
	} else if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := h.client().Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

func (h *hubProc) getAs(token, path string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, h.URL+path, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := h.client().Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String(), nil
}

// kubectl runs the real kubectl against a workspace ("" means the
// kubeconfig's default, root) and returns combined output.
func (h *hubProc) kubectl(ws string, args ...string) (string, error) {
	return h.kubectlCtx(context.Background(), ws, args...)
}

func (h *hubProc) kubectlCtx(ctx context.Context, ws string, args ...string) (string, error) {
	full := []string{"--kubeconfig", h.Kubecfg}
	if ws != "" {
		full = append(full, "--server", h.URL+"/clusters/"+ws)
	}
	full = append(full, args...)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.kubectlBin, full...)
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+filepath.Join(h.opts.dataDir, "kubecache"))
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// mustKubectl fails the test when kubectl fails.
func (h *hubProc) mustKubectl(ws string, args ...string) string {
	h.t.Helper()
	out, err := h.kubectl(ws, args...)
	if err != nil {
		h.t.Fatalf("kubectl %s (workspace %q): %v\n%s", strings.Join(args, " "), ws, err, out)
	}
	return out
}

// apply pipes a manifest into kubectl.
func (h *hubProc) applyStdin(ws, manifest string, args ...string) (string, error) {
	full := []string{"--kubeconfig", h.Kubecfg}
	if ws != "" {
		full = append(full, "--server", h.URL+"/clusters/"+ws)
	}
	full = append(full, args...)
	full = append(full, "-f", "-")
	cmd := exec.Command(h.kubectlBin, full...)
	cmd.Stdin = strings.NewReader(manifest)
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+filepath.Join(h.opts.dataDir, "kubecache"))
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func (h *hubProc) mustApply(ws, manifest string, args ...string) string {
	h.t.Helper()
	out, err := h.applyStdin(ws, manifest, args...)
	if err != nil {
		h.t.Fatalf("kubectl %v -f - (workspace %q): %v\n%s\n---\n%s", args, ws, err, out, manifest)
	}
	return out
}

// createWorkspace creates a child workspace of parent and returns its id.
func (h *hubProc) createWorkspace(parent, name string) string {
	h.t.Helper()
	h.mustApply(parent, fmt.Sprintf("apiVersion: tenancy.wharf.dev/v1alpha1\nkind: Workspace\nmetadata:\n  name: %s\n", name), "create")
	return h.mustKubectl(parent, "get", "workspace", name, "-o", "jsonpath={.status.cluster}")
}

// eventually is testutil.Eventually under the name this package's tests
// call.
func eventually(t *testing.T, timeout time.Duration, cond func() error) {
	t.Helper()
	testutil.Eventually(t, timeout, cond)
}
