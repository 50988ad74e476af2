package edges

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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

	"k8s.io/client-go/tools/clientcmd"

	"github.com/wharfhub/wharf/test/kube"
)

// realHub is a running wharf-hub binary: the review endpoint of the
// authorizer tests. Its decisions are the hub's own (RBAC per workspace,
// service-account confinement), never a stand-in's.
type realHub struct {
	t       *testing.T
	URL     string
	Token   string // the admin's
	Kubecfg string
	dataDir string
	kubectl string
}

// hubTokens are static users of the test hub.
const hubTokens = "alice-token,alice,alice-uid,\"devs\"\nbob-token,bob,bob-uid,\"devs\"\n"

func startRealHub(t *testing.T) *realHub {
	t.Helper()
	bin := hubBin(t)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(hubTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	data := filepath.Join(dir, "data")
	cmd := exec.Command(bin, "--shutdown-delay=0", "--data-dir", data, "--secure-port", fmt.Sprint(port), "--bind-address", "127.0.0.1", "--token-auth-file", tokens)
	var log testutil.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
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
			t.Logf("wharf-hub log:\n%s", log.String())
		}
	})
	h := &realHub{t: t, URL: fmt.Sprintf("https://127.0.0.1:%d", port), Kubecfg: filepath.Join(data, "admin.kubeconfig"), dataDir: data, kubectl: kube.KubectlPath(t)}
	deadline := time.Now().Add(120 * time.Second)
	for {
		select {
		case <-exited:
			t.Fatalf("wharf-hub exited:\n%s", log.String())
		default:
		}
		if tok, err := os.ReadFile(filepath.Join(data, "admin-token")); err == nil {
			h.Token = strings.TrimSpace(string(tok))
			if out, err := h.run("root", "get", "--raw", "/readyz"); err == nil && out == "ok" {
				return h
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("wharf-hub not ready:\n%s", log.String())
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// hubBin is ./bin/wharf-hub from make build, else a fresh build.
func hubBin(t *testing.T) string {
	t.Helper()
	root, err := kube.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if p := filepath.Join(root, "bin", "wharf-hub"); fileExists(p) && os.Getenv("WHARF_BIN_DIR") == "" {
		return p
	}
	if d := os.Getenv("WHARF_BIN_DIR"); d != "" && fileExists(filepath.Join(d, "wharf-hub")) {
		return filepath.Join(d, "wharf-hub")
	}
	out := filepath.Join(t.TempDir(), "wharf-hub")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/wharf-hub")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build wharf-hub: %v\n%s", err, b)
	}
	return out
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// run is kubectl as the admin in workspace ws.
func (h *realHub) run(ws string, args ...string) (string, error) {
	return h.runStdin(ws, "", args...)
}

func (h *realHub) runStdin(ws, stdin string, args ...string) (string, error) {
	full := append([]string{"--kubeconfig", h.Kubecfg, "--server", h.URL + "/clusters/" + ws}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.kubectl, full...)
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+filepath.Join(h.dataDir, "kubecache"))
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func (h *realHub) must(ws string, args ...string) string {
	h.t.Helper()
	out, err := h.run(ws, args...)
	if err != nil {
		h.t.Fatalf("kubectl %v in %s: %v\n%s", args, ws, err, out)
	}
	return out
}

func (h *realHub) apply(ws, manifest string) {
	h.t.Helper()
	if out, err := h.runStdin(ws, manifest, "apply", "-f", "-"); err != nil {
		h.t.Fatalf("apply in %s: %v\n%s\n%s", ws, err, out, manifest)
	}
}

// workspace creates root:<name> and returns its logical cluster id.
func (h *realHub) workspace(name string) string {
	h.t.Helper()
	h.apply("root", "apiVersion: tenancy.wharf.dev/v1alpha1\nkind: Workspace\nmetadata:\n  name: "+name+"\n")
	var id string
	waitFor(h.t, 60*time.Second, func() bool {
		id, _ = h.run("root", "get", "workspace", name, "-o", "jsonpath={.status.cluster}")
		return len(id) == 16 && !strings.Contains(id, " ")
	})
	return id
}

// adminRestConfig trusts the hub's CA, from the admin kubeconfig.
func (h *realHub) adminRestConfig() (caOnlyHost string, ca []byte) {
	h.t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", h.Kubecfg)
	if err != nil {
		h.t.Fatal(err)
	}
	ca = cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			h.t.Fatal(err)
		}
	}
	return cfg.Host, ca
}

// hubClient trusts the hub's CA.
func hubClient(ca []byte) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}
