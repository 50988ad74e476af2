package edges

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"github.com/wharfhub/wharf/test/testutil"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wharfhub/wharf/test/kube"
)

// Static hub identities of the tests (--token-auth-file). alice and bob
// are ordinary people; carol has access to no edge workspace.
const (
	aliceToken = "alice-edge-token"
	bobToken   = "bob-edge-token"
	carolToken = "carol-edge-token"
)

const tokenFile = aliceToken + ",alice,alice-uid,\"devs\"\n" +
	bobToken + ",bob,bob-uid,\"devs\"\n" +
	carolToken + ",carol,carol-uid,\"others\"\n"

// hubOptions configure one hub process.
type hubOptions struct {
	etcdServers []string // default: embedded etcd
	replicaName string
	providerDir string
	configFile  string // --provider-config edges=<file>
}

// hubProc is a running wharf-hub.
type hubProc struct {
	t          *testing.T
	opts       hubOptions
	dataDir    string
	URL        string
	Token      string // the admin's
	Kubecfg    string
	CA         []byte // PEM the hub serves with (pinned by agents and the CLI)
	kubectlBin string

	cmd     *exec.Cmd
	log     *testutil.Buffer
	exited  chan struct{}
	exitErr error
}

func startHub(t *testing.T, opts hubOptions) *hubProc {
	t.Helper()
	h := &hubProc{t: t, opts: opts, dataDir: t.TempDir(), kubectlBin: kube.KubectlPath(t)}
	tokens := filepath.Join(h.dataDir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(tokenFile), 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		if err = h.startOnce(tokens); err == nil {
			break
		}
		if !strings.Contains(h.log.String(), "address already in use") {
			break
		}
	}
	if err != nil {
		t.Fatalf("wharf-hub not ready: %v\n%s", err, h.log.String())
	}
	t.Cleanup(func() {
		h.stop()
		if t.Failed() {
			t.Logf("wharf-hub %s log:\n%s", h.URL, testutil.Tail(h.log.String(), 400))
		}
	})
	return h
}

func (h *hubProc) startOnce(tokens string) error {
	port := freePort(h.t)
	args := []string{"--shutdown-delay=0", "--data-dir", h.dataDir, "--secure-port", fmt.Sprint(port), "--bind-address", "127.0.0.1",
		"--token-auth-file", tokens, "--provider-dir", h.opts.providerDir, "--enable-token-login"}
	if h.opts.configFile != "" {
		args = append(args, "--provider-config", "edges="+h.opts.configFile)
	}
	if len(h.opts.etcdServers) > 0 {
		args = append(args, "--etcd-servers", strings.Join(h.opts.etcdServers, ","))
	}
	if h.opts.replicaName != "" {
		args = append(args, "--replica-name", h.opts.replicaName)
	}
	h.cmd = exec.Command(hubBinary(h.t), args...)
	h.log = &testutil.Buffer{}
	h.cmd.Stdout, h.cmd.Stderr = h.log, h.log
	if err := h.cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	exited := make(chan struct{})
	h.exited = exited
	cmd := h.cmd
	go func() { h.exitErr = cmd.Wait(); close(exited) }()
	h.URL = fmt.Sprintf("https://127.0.0.1:%d", port)
	h.Kubecfg = filepath.Join(h.dataDir, "admin.kubeconfig")
	deadline := time.Now().Add(2 * time.Minute)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("exited early: %v", h.exitErr)
		case <-time.After(200 * time.Millisecond):
		}
		tok, err := os.ReadFile(filepath.Join(h.dataDir, "admin-token"))
		if err != nil {
			continue
		}
		h.Token = strings.TrimSpace(string(tok))
		if h.CA, err = os.ReadFile(filepath.Join(h.dataDir, "pki", "serving.crt")); err != nil {
			continue
		}
		code, body := h.do(h.Token, http.MethodGet, "/readyz", "", nil)
		if code == http.StatusOK {
			return nil
		}
		last = fmt.Errorf("readyz %d %s", code, body)
	}
	h.stop()
	return fmt.Errorf("timeout: %v", last)
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

// kill9 kills the hub and its plugins the way a lost machine would: the
// plugins die with it (their process group), with no clean shutdown.
func (h *hubProc) kill9(t *testing.T, plugins ...int) {
	t.Helper()
	_ = h.cmd.Process.Signal(syscall.SIGKILL)
	for _, p := range plugins {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	<-h.exited
	h.cmd = nil
}

func (h *hubProc) pid() int { return h.cmd.Process.Pid }

// client trusts the hub's serving CA only.
func (h *hubProc) client() *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(h.CA)
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

func (h *hubProc) tlsConfig() *tls.Config {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(h.CA)
	return &tls.Config{RootCAs: pool}
}

// do sends one request ("" token: anonymous) and returns code and body.
func (h *hubProc) do(token, method, path, body string, hdr http.Header) (int, string) {
	req, err := http.NewRequest(method, h.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := h.client().Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// kubectl runs the real kubectl as the admin in workspace ws.
func (h *hubProc) kubectl(ws string, args ...string) (string, error) {
	full := append([]string{"--kubeconfig", h.Kubecfg, "--server", h.URL + "/clusters/" + ws}, args...)
	return runKubectl(h.kubectlBin, h.dataDir, "", full...)
}

func (h *hubProc) mustKubectl(ws string, args ...string) string {
	h.t.Helper()
	out, err := h.kubectl(ws, args...)
	if err != nil {
		h.t.Fatalf("kubectl %s (workspace %s): %v\n%s", strings.Join(args, " "), ws, err, out)
	}
	return out
}

func (h *hubProc) mustApply(ws, manifest string, args ...string) string {
	h.t.Helper()
	full := append([]string{"--kubeconfig", h.Kubecfg, "--server", h.URL + "/clusters/" + ws}, args...)
	full = append(full, "-f", "-")
	out, err := runKubectl(h.kubectlBin, h.dataDir, manifest, full...)
	if err != nil {
		h.t.Fatalf("kubectl %v -f - (workspace %s): %v\n%s\n---\n%s", args, ws, err, out, manifest)
	}
	return out
}

func runKubectl(bin, cacheDir, stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+filepath.Join(cacheDir, "kubecache"))
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// createWorkspace creates root:<name>, enables the edges provider there
// (a ProviderBinding) and returns its logical cluster id.
func (h *hubProc) createWorkspace(name string, providers ...string) string {
	h.t.Helper()
	h.mustApply("root", fmt.Sprintf("apiVersion: tenancy.wharf.dev/v1alpha1\nkind: Workspace\nmetadata:\n  name: %s\n", name), "create")
	var id string
	eventually(h.t, time.Minute, func() error {
		out, err := h.kubectl("root", "get", "workspace", name, "-o", "jsonpath={.status.cluster}")
		if err != nil || out == "" {
			return fmt.Errorf("workspace %s has no cluster yet: %v %s", name, err, out)
		}
		id = out
		return nil
	})
	for _, p := range providers {
		h.mustApply("root:"+name, fmt.Sprintf("apiVersion: providers.wharf.dev/v1alpha1\nkind: ProviderBinding\nmetadata:\n  name: %s\nspec:\n  provider: %s\n", p, p), "create")
	}
	return id
}

// grantAdmin makes user an administrator of root:<ws>. New workspaces
// have no bootstrap roles (no cluster-admin), so the role is written out.
func (h *hubProc) grantAdmin(ws, user string) {
	h.t.Helper()
	h.mustApply("root:"+ws, fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: ws-admin}
rules:
- {apiGroups: ["*"], resources: ["*"], verbs: ["*"]}
- {nonResourceURLs: ["*"], verbs: ["*"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: ws-admin-%s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ws-admin}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: %s}]
`, user, user), "apply")
}

func freePort(t *testing.T) int {
	t.Helper()
	return testutil.FreePort(t)
}

// eventually is testutil.Eventually under the name this package's tests
// call.
func eventually(t *testing.T, timeout time.Duration, cond func() error) {
	t.Helper()
	testutil.Eventually(t, timeout, cond)
}
