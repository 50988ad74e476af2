package ha

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/test/kube"
	"github.com/wharfhub/wharf/test/testutil"
)

// snapBin is a binary from make build (bin/ or $WHARF_BIN_DIR).
func snapBin(t *testing.T, name string) string {
	t.Helper()
	dir := os.Getenv("WHARF_BIN_DIR")
	if dir == "" {
		root, err := kube.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, "bin")
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s not built (make build): %v", name, err)
	}
	return p
}

// snapHub is one wharf-hub process on embedded etcd in dataDir.
type snapHub struct {
	t       *testing.T
	dataDir string
	url     string
	cmd     *exec.Cmd
	log     *testutil.Buffer
	exited  chan struct{}
}

// snapStartHub starts wharf-hub on embedded etcd in dataDir, with extra
// flags, and waits for /readyz.
func snapStartHub(t *testing.T, dataDir string, extra ...string) *snapHub {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	h := &snapHub{t: t, dataDir: dataDir, url: fmt.Sprintf("https://127.0.0.1:%d", port), log: &testutil.Buffer{}, exited: make(chan struct{})}
	args := append([]string{"--data-dir", dataDir, "--secure-port", fmt.Sprint(port), "--bind-address", "127.0.0.1"}, extra...)
	h.cmd = exec.Command(snapBin(t, "wharf-hub"), args...)
	h.cmd.Stdout, h.cmd.Stderr = h.log, h.log
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = h.cmd.Wait(); close(h.exited) }()
	t.Cleanup(func() {
		h.stop()
		if t.Failed() {
			t.Logf("wharf-hub (%s) log:\n%s", dataDir, testutil.Tail(h.log.String(), 60))
		}
	})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case <-h.exited:
			t.Fatalf("wharf-hub exited early:\n%s", h.log.String())
		default:
		}
		if code, _ := h.get("/readyz"); code == http.StatusOK {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("wharf-hub not ready:\n%s", testutil.Tail(h.log.String(), 60))
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func (h *snapHub) get(path string) (int, string) {
	code, _, body := h.do(path, nil)
	return code, body
}

// do GETs path as the hub admin with extra headers; it returns the code,
// the response headers and the body.
func (h *snapHub) do(path string, hdr http.Header) (int, http.Header, string) {
	tok, err := os.ReadFile(filepath.Join(h.dataDir, "admin-token"))
	if err != nil {
		return 0, nil, err.Error()
	}
	pool := x509.NewCertPool()
	if pem, err := os.ReadFile(filepath.Join(h.dataDir, "pki", "serving.crt")); err == nil {
		pool.AppendCertsFromPEM(pem)
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, _ := http.NewRequest(http.MethodGet, h.url+path, nil)
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err.Error()
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, resp.Header, b.String()
}

// stop sends SIGTERM and waits for the exit.
func (h *snapHub) stop() {
	if h.cmd.Process == nil {
		return
	}
	_ = h.cmd.Process.Signal(os.Interrupt)
	select {
	case <-h.exited:
	case <-time.After(45 * time.Second):
		_ = h.cmd.Process.Kill()
		<-h.exited
	}
}

// kubectl runs the real kubectl as the hub admin in workspace ws, with
// stdin (may be empty).
func (h *snapHub) kubectl(ws, stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	full := append([]string{"--kubeconfig", filepath.Join(h.dataDir, "admin.kubeconfig"), "--server", h.url + "/clusters/" + ws}, args...)
	cmd := exec.CommandContext(ctx, kube.KubectlPath(h.t), full...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// mustKubectl retries until kubectl succeeds (a new workspace takes a
// moment to serve), then returns its output.
func (h *snapHub) mustKubectl(ws, stdin string, args ...string) string {
	h.t.Helper()
	var out string
	var err error
	for i := 0; i < 60; i++ {
		if out, err = h.kubectl(ws, stdin, args...); err == nil {
			return strings.TrimSpace(out)
		}
		time.Sleep(500 * time.Millisecond)
	}
	h.t.Fatalf("kubectl %s %v: %v\n%s", ws, args, err, out)
	return ""
}

// snapRun runs wharf-hub with args (the snapshot commands).
func snapRun(t *testing.T, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, snapBin(t, "wharf-hub"), args...).CombinedOutput()
	return string(out), err
}
