package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/wharfhub/wharf/test/testutil"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/test/kube"
)

// The end-to-end tests of the edge commands run the real binaries from
// $WHARF_BIN_DIR or <repo>/bin (`make build`): wharf-hub with the edges
// provider plugin, wharf, wharf-agent, and the fixture's kubectl.

const aliceHubToken = "alice-cli-edge-token"

// e2eBinary is a built binary; a missing one fails the test (make test
// builds them first, so nothing is skipped there).
func e2eBinary(t *testing.T, name string) string {
	t.Helper()
	root, err := kube.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{os.Getenv("WHARF_BIN_DIR"), filepath.Join(root, "bin")} {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	t.Fatalf("%s not built: run `make build`", name)
	return ""
}

// e2eHub is a running wharf-hub with the edges provider.
type e2eHub struct {
	URL, CAFile, AdminKubeconfig, dir string
	log                               *testutil.Buffer
}

func startE2EHub(t *testing.T) *e2eHub {
	t.Helper()
	h := &e2eHub{dir: t.TempDir(), log: &testutil.Buffer{}}
	tokens := filepath.Join(h.dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(aliceHubToken+",alice,alice-uid,\"devs\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	data := filepath.Join(h.dir, "data")
	cmd := exec.Command(e2eBinary(t, "wharf-hub"), "--shutdown-delay=0", "--data-dir", data, "--secure-port", fmt.Sprint(port),
		"--bind-address", "127.0.0.1", "--token-auth-file", tokens, "--provider", "edges="+e2eBinary(t, "wharf-provider-edges"))
	cmd.Stdout, cmd.Stderr = h.log, h.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("wharf-hub log (tail):\n%s", testutil.Tail(h.log.String(), 150))
		}
	})
	h.URL = fmt.Sprintf("https://127.0.0.1:%d", port)
	h.CAFile = filepath.Join(data, "pki", "serving.crt")
	h.AdminKubeconfig = filepath.Join(data, "admin.kubeconfig")
	eventuallyE2E(t, 2*time.Minute, func() error {
		select {
		case <-exited:
			t.Fatalf("wharf-hub exited:\n%s", testutil.Tail(h.log.String(), 100))
		default:
		}
		ca, err := os.ReadFile(h.CAFile)
		if err != nil {
			return err
		}
		if _, err := os.Stat(h.AdminKubeconfig); err != nil {
			return err
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca)
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		resp, err := hc.Get(h.URL + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		// /readyz may need authentication; any answer over verified TLS
		// means the server is up, and kubectl below waits for the rest.
		return nil
	})
	return h
}

// kubectl runs the fixture's kubectl as the hub admin in workspace ws.
func (h *e2eHub) kubectl(t *testing.T, ws string, stdin string, args ...string) string {
	t.Helper()
	out, errOut, code := runE2E(t, nil, stdin, kube.KubectlPath(t),
		append([]string{"--kubeconfig", h.AdminKubeconfig, "--server", h.URL + "/clusters/" + ws}, args...)...)
	if code != 0 {
		t.Fatalf("kubectl %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// runE2E runs a command and returns stdout, stderr and the exit code.
func runE2E(t *testing.T, env []string, stdin, bin string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errOut.String(), 0
	case errors.As(err, &ee):
		return out.String(), errOut.String(), ee.ExitCode()
	default:
		t.Fatalf("%s: %v", bin, err)
		return "", "", -1
	}
}

func eventuallyE2E(t *testing.T, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not met within %s: %v", timeout, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
