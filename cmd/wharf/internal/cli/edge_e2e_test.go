package cli

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wharfhub/wharf/test/kube"
	"github.com/wharfhub/wharf/test/testutil"
)

// e2eUser is a person using the CLI: their own kubeconfig (written by
// `wharf login --token-stdin`) and HOME.
type e2eUser struct {
	wharf string
	env   []string
	dir   string
}

func loginE2E(t *testing.T, h *e2eHub, token string) *e2eUser {
	t.Helper()
	dir := t.TempDir()
	u := &e2eUser{wharf: testutil.Binary(t, "wharf"), dir: dir,
		env: []string{"HOME=" + dir, "KUBECONFIG=" + filepath.Join(dir, "config"), "KUBECACHEDIR=" + filepath.Join(dir, "cache")}}
	out, errOut, code := testutil.Run(t, u.env, token+"\n", u.wharf, "login", "--token-stdin", "--certificate-authority", h.CAFile, h.URL)
	if code != 0 {
		t.Fatalf("wharf login: exit %d\n%s%s", code, out, errOut)
	}
	return u
}

func (u *e2eUser) run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return testutil.Run(t, u.env, "", u.wharf, args...)
}

func (u *e2eUser) must(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := u.run(t, args...)
	if code != 0 {
		t.Fatalf("wharf %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// setupEdgesWorkspace creates root:<name> with the edges provider enabled
// and alice as its admin, and waits until the Edge API is served there.
func setupEdgesWorkspace(t *testing.T, h *e2eHub, u *e2eUser, name string) {
	t.Helper()
	h.kubectl(t, "root", fmt.Sprintf("apiVersion: tenancy.wharf.dev/v1alpha1\nkind: Workspace\nmetadata:\n  name: %s\n", name), "create", "-f", "-")
	ws := "root:" + name
	testutil.Eventually(t, time.Minute, func() error {
		_, _, code := testutil.Run(t, nil, "", kube.KubectlPath(t), "--kubeconfig", h.AdminKubeconfig, "--server", h.URL+"/clusters/"+ws, "get", "namespaces")
		if code != 0 {
			return fmt.Errorf("workspace %s not served yet", ws)
		}
		return nil
	})
	// The workspace has no bootstrap cluster-admin role: grant alice all
	// of the Edge API (proxy included) and "access" to the workspace,
	// which the backend proxy checks before the provider sees a request.
	h.kubectl(t, ws, `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: edge-admin
rules:
- apiGroups: ["edges.wharf.dev"]
  resources: ["edges", "edges/proxy"]
  verbs: ["*"]
- nonResourceURLs: ["/"]
  verbs: ["access"]
`, "create", "-f", "-")
	h.kubectl(t, ws, "", "create", "clusterrolebinding", "alice-edge-admin", "--clusterrole=edge-admin", "--user=alice")
	// Not enabled yet: the CLI says what to do about it.
	if _, errOut, code := u.run(t, "edge", "list", "-w", ws); code != 1 || !strings.Contains(errOut, "enable it with a ProviderBinding") {
		t.Errorf("edge list before the binding: exit %d %s", code, errOut)
	}
	h.kubectl(t, ws, "apiVersion: providers.wharf.dev/v1alpha1\nkind: ProviderBinding\nmetadata:\n  name: edges\nspec:\n  provider: edges\n", "create", "-f", "-")
	testutil.Eventually(t, 2*time.Minute, func() error {
		out, errOut, code := u.run(t, "edge", "list", "-w", ws)
		if code != 0 || !strings.Contains(errOut, "No resources found") {
			return fmt.Errorf("edge list: exit %d %s%s", code, out, errOut)
		}
		return nil
	})
}

// TestEdgeCLIKubernetesFlow is the new user's path: log in, create an
// edge with --wait, run the printed `wharf-agent run` line verbatim on
// "the edge machine", then reach the edge cluster with kubectl through
// `wharf kubeconfig edge`, as themselves.
func TestEdgeCLIKubernetesFlow(t *testing.T) {
	edge := kube.Start(t, kube.Options{})
	// On the edge cluster alice may read namespaces and nothing more.
	ctx0 := context.Background()
	cs := edge.Clientset(t)
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx0, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "ns-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx0, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-ns-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "ns-reader"},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "alice"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h := startE2EHub(t)
	alice := loginE2E(t, h, aliceHubToken)
	setupEdgesWorkspace(t, h, alice, "lab-ws")
	ws := "root:lab-ws"

	// Ctrl-C ends a --wait: an edge whose agent never comes.
	idle, _, idleErr := startCreate(t, alice, "idle", "--type", "kubernetes", "-w", ws, "--wait")
	if err := idle.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := idle.Wait(); err == nil || !strings.Contains(idleErr.String(), "stopped waiting") {
		t.Fatalf("create --wait after Ctrl-C: %v\n%s", err, idleErr.String())
	}

	// create --wait prints the join command, then waits (progress on
	// stderr) until the agent started below connects.
	create, runLine, stderr := startCreate(t, alice, "lab", "--type", "kubernetes", "-w", ws, "--wait", "--timeout", "4m")
	startVerbatimAgent(t, runLine, edge.Kubeconfig())
	if err := create.Wait(); err != nil {
		t.Fatalf("edge create --wait: %v\nstderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), `edge "lab": Ready`) {
		t.Errorf("no progress on stderr:\n%s", stderr.String())
	}

	kc := filepath.Join(alice.dir, "lab.kubeconfig")
	alice.must(t, "kubeconfig", "edge", "lab", "-w", ws, "-o", kc)
	if st, err := os.Stat(kc); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig file: %v %v", st, err)
	}
	kubectl := kube.KubectlPath(t)
	who, errOut, code := testutil.Run(t, alice.env, "", kubectl, "--kubeconfig", kc, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	if code != 0 || who != "alice" {
		t.Fatalf("whoami through the edge: %q exit %d %s", who, code, errOut)
	}
	ns, errOut, code := testutil.Run(t, alice.env, "", kubectl, "--kubeconfig", kc, "get", "namespaces", "-o", "name")
	if code != 0 || !strings.Contains(ns, "namespace/kube-system") {
		t.Fatalf("get namespaces through the edge: exit %d\n%s%s", code, ns, errOut)
	}
	// alice may only read namespaces there: the edge's RBAC, not the agent's, applies.
	if out, errOut, code := testutil.Run(t, alice.env, "", kubectl, "--kubeconfig", kc, "create", "namespace", "alice-was-here"); code == 0 || !strings.Contains(errOut, "Forbidden") {
		t.Fatalf("create namespace through the edge as a viewer: exit %d %s%s", code, out, errOut)
	}

	compareListWithKubectl(t, h, alice, ws)

	// join-command mints a fresh token: a different bundle.
	again := alice.must(t, "edge", "join-command", "lab", "-w", ws)
	if !strings.Contains(again, "wharf-agent run --join ") || strings.Contains(again, strings.Fields(runLine)[3]) {
		t.Errorf("join-command did not print a fresh bundle:\n%s", again)
	}

	if out := alice.must(t, "edge", "delete", "lab", "-w", ws); out != "edge.edges.wharf.dev \"lab\" deleted\n" {
		t.Errorf("delete printed %q", out)
	}
	_, wErr, wCode := alice.run(t, "edge", "get", "lab", "-w", ws)
	_, kErr, kCode := testutil.Run(t, nil, "", kubectl, "--kubeconfig", h.AdminKubeconfig, "--server", h.URL+"/clusters/"+ws, "get", "edges", "lab")
	if wCode != 1 || kCode != 1 || wErr != kErr {
		t.Errorf("get of a deleted edge: wharf exit %d %q, kubectl exit %d %q", wCode, wErr, kCode, kErr)
	}
}

// startCreate starts `wharf edge create <args>` and returns once it has
// printed its "wharf-agent run " line (and that line), checking that the
// first line is kubectl's "created".
func startCreate(t *testing.T, u *e2eUser, args ...string) (*exec.Cmd, string, *testutil.Buffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, u.wharf, append([]string{"edge", "create"}, args...)...)
	cmd.Env = append(os.Environ(), u.env...)
	stderr := &testutil.Buffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var printed []string
	var runLine string
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for runLine == "" && sc.Scan() {
		printed = append(printed, sc.Text())
		if strings.HasPrefix(sc.Text(), "wharf-agent run ") {
			runLine = sc.Text()
		}
	}
	if runLine == "" {
		_ = cmd.Wait()
		t.Fatalf("edge create printed no wharf-agent run line:\n%s\nstderr:\n%s", strings.Join(printed, "\n"), stderr.String())
	}
	if want := "edge.edges.wharf.dev/" + args[0] + " created"; printed[0] != want {
		t.Errorf("first line %q, want %q", printed[0], want)
	}
	go func() {
		for sc.Scan() {
		}
	}()
	return cmd, runLine, stderr
}

// startVerbatimAgent runs the printed line exactly, through a shell, on
// "the edge machine": PATH finds wharf-agent, KUBECONFIG names the edge
// cluster, and /var/lib/wharf-agent is a private tmpfs in a mount
// namespace so parallel tests never share the real directory.
func startVerbatimAgent(t *testing.T, line, edgeKubeconfig string) {
	t.Helper()
	if err := os.MkdirAll(agentStateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	agentDir := filepath.Dir(testutil.Binary(t, "wharf-agent"))
	log := &testutil.Buffer{}
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
		"mount -t tmpfs -o mode=0700 tmpfs "+agentStateDir+" && exec "+line)
	cmd.Env = append(os.Environ(), "PATH="+agentDir+":"+os.Getenv("PATH"), "KUBECONFIG="+edgeKubeconfig)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("wharf-agent log (tail):\n%s", testutil.Tail(log.String(), 80))
		}
	})
}

// compareListWithKubectl: `wharf edge list` prints what `kubectl get
// edges` prints (the CRD's printer columns), AGE aside, which may tick
// between the two calls.
func compareListWithKubectl(t *testing.T, h *e2eHub, u *e2eUser, ws string) {
	t.Helper()
	testutil.Eventually(t, time.Minute, func() error {
		mine := u.must(t, "edge", "list", "-w", ws)
		theirs := h.kubectl(t, ws, "", "get", "edges")
		if a, b := dropLastColumn(mine), dropLastColumn(theirs); a != b {
			return fmt.Errorf("wharf edge list:\n%s\nkubectl get edges:\n%s", mine, theirs)
		}
		return nil
	})
}

func dropLastColumn(table string) string {
	var out []string
	for _, l := range strings.Split(strings.TrimRight(table, "\n"), "\n") {
		l = strings.TrimRight(l, " ")
		if i := strings.LastIndex(l, " "); i >= 0 {
			l = strings.TrimRight(l[:i], " ")
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}
