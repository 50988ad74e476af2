package edges

import (
	"bufio"
	"context"
	"fmt"
	"github.com/wharfhub/wharf/test/testutil"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
)

// agentStateDir is the state dir the CLI's printed line names.
const agentStateDir = "/var/lib/wharf-agent"

// testCLIFlow is the whole flow as a new user would run it: `wharf login
// --token-stdin`, `wharf edge create`, the printed `wharf-agent run …`
// line run verbatim through sh, `wharf kubeconfig edge`, then kubectl get
// namespaces from that kubeconfig.
func testCLIFlow(t *testing.T, e *env) {
	// alice owns a workspace of her own with edges enabled: the README's
	// testdata/lab.yaml, so the walk-through stays true.
	e.hub.createWorkspace("alicews")
	lab, err := os.ReadFile(filepath.Join("testdata", "lab.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	e.hub.mustApply("root:alicews", string(lab), "create")
	eventually(t, 2*time.Minute, func() error {
		if out, err := e.hub.kubectl("root:alicews", "get", "edges"); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})

	home := t.TempDir()
	kc := filepath.Join(home, ".kube", "config")
	wharf := func(stdin string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, wharfBinary(t), args...)
		cmd.Env = append(filteredEnv("KUBECONFIG", "HOME"), "HOME="+home, "KUBECONFIG="+kc)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := wharf(aliceToken+"\n", "login", e.hub.URL, "--token-stdin", "--certificate-authority="+e.caFile)
	if err != nil {
		t.Fatalf("wharf login --token-stdin: %v\n%s", err, out)
	}
	if strings.Contains(out, aliceToken) {
		t.Errorf("wharf login printed the token")
	}

	out, err = wharf("", "edge", "create", "lab", "--type", "kubernetes", "-w", "root:alicews")
	if err != nil {
		t.Fatalf("wharf edge create: %v\n%s", err, out)
	}
	line := agentLine(t, out)

	// Run it verbatim on "the edge machine": a shell whose PATH has
	// wharf-agent and whose KUBECONFIG names the edge cluster, and
	// nothing else from the hub side. The line names a fixed state dir,
	// so the shell gets a private tmpfs there (its own mount namespace):
	// nothing of this machine's /var/lib/wharf-agent is read or changed,
	// and tests running at the same time cannot meet in it.
	if err := os.MkdirAll(agentStateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	agent := exec.Command("unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
		"mount -t tmpfs -o mode=0700 tmpfs "+agentStateDir+" && exec "+line)
	agent.Dir = t.TempDir()
	agent.Env = append(filteredEnv("KUBECONFIG", "HOME", "PATH"), "HOME="+t.TempDir(),
		"PATH="+filepath.Dir(agentBinary(t))+":/usr/local/bin:/usr/bin:/bin", "KUBECONFIG="+e.agentKubeconfig)
	agent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	agentLog := &testutil.Buffer{}
	agent.Stdout, agent.Stderr = agentLog, agentLog
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	agentDone := make(chan struct{})
	go func() { _ = agent.Wait(); close(agentDone) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-agent.Process.Pid, syscall.SIGTERM)
		select {
		case <-agentDone:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-agent.Process.Pid, syscall.SIGKILL)
			<-agentDone
		}
		if t.Failed() {
			t.Logf("agent (the printed line) log:\n%s", testutil.Tail(agentLog.String(), 100))
		}
	})

	eventually(t, 2*time.Minute, func() error {
		out, err := wharf("", "edge", "list", "-w", "root:alicews")
		if err != nil {
			return fmt.Errorf("wharf edge list: %v: %s", err, out)
		}
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) >= 3 && f[0] == "lab" && f[2] == string(v1alpha1.PhaseReady) {
				return nil
			}
		}
		return fmt.Errorf("lab is not Ready:\n%s", out)
	})
	if out, err := wharf("", "edge", "list", "-w", "root:alicews"); err != nil || !strings.HasPrefix(strings.TrimSpace(out), "NAME") ||
		!strings.Contains(out, "TYPE") || !strings.Contains(out, "CONNECTED") || !strings.Contains(out, "AGENT") {
		t.Errorf("wharf edge list columns: %v\n%s", err, out)
	}

	edgeKC := filepath.Join(home, "lab.kubeconfig")
	if out, err := wharf("", "kubeconfig", "edge", "lab", "-w", "root:alicews", "-o", edgeKC); err != nil {
		t.Fatalf("wharf kubeconfig edge: %v\n%s", err, out)
	}
	if fi, err := os.Stat(edgeKC); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("edge kubeconfig: %v %v", err, fi)
	}
	// The edge cluster lets alice, herself, list namespaces.
	e.kube.ApplyYAML(t, `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: alice-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edge-test-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
`)
	eventually(t, time.Minute, func() error {
		kout, err := runKubectl(e.hub.kubectlBin, home, "", "--kubeconfig", edgeKC, "get", "namespaces", "-o", "name")
		if err != nil || !strings.Contains(kout, "namespace/kube-system") || !strings.Contains(kout, "namespace/default") {
			return fmt.Errorf("kubectl get namespaces through the edge kubeconfig: %v\n%s", err, kout)
		}
		return nil
	})

	// join-command prints a fresh self-contained line (a new token).
	out, err = wharf("", "edge", "join-command", "lab", "-w", "root:alicews")
	if err != nil {
		t.Fatalf("wharf edge join-command: %v\n%s", err, out)
	}
	if again := agentLine(t, out); again == line {
		t.Errorf("join-command printed the same token again")
	}
}

// agentLine returns the one printed line that starts with "wharf-agent run ".
func agentLine(t *testing.T, out string) string {
	t.Helper()
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "wharf-agent run ") {
			lines = append(lines, sc.Text())
		}
	}
	if len(lines) != 1 {
		t.Fatalf("want exactly one line starting with \"wharf-agent run \", got %d:\n%s", len(lines), out)
	}
	return lines[0]
}
