package edges

import (
	"bufio"
	"encoding/base64"
	"errors"
	"fmt"
	"github.com/wharfhub/wharf/test/testutil"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/test/sshd"
)

// userKubeconfig writes a kubeconfig for a hub user (static token) whose
// context is root:<ws>, the shape `wharf login` leaves behind.
func (e *env) userKubeconfig(t *testing.T, user, token, ws string) string {
	t.Helper()
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: hub
  cluster:
    server: %s/clusters/root:%s
    certificate-authority-data: %s
users:
- name: %s
  user:
    token: %s
contexts:
- name: %s@hub
  context: {cluster: hub, user: %s}
current-context: %s@hub
`, e.hub.URL, ws, base64.StdEncoding.EncodeToString(e.hub.CA), user, token, user, user, user)
	p := filepath.Join(t.TempDir(), user+".kubeconfig")
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// wharfSSH builds `wharf ssh <edge> … -- command` as alice, with the
// fixture's client key and login.
func (e *env) wharfSSH(t *testing.T, kubeconfig string, s *sshd.Server, edge string, command ...string) *exec.Cmd {
	args := []string{"ssh", edge, "--kubeconfig", kubeconfig, "-l", s.User, "-i", s.ClientKey,
		"-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes"}
	if len(command) > 0 {
		args = append(append(args, "--"), command...)
	}
	cmd := exec.Command(wharfBinary(t), args...)
	// A fresh HOME: no ~/.ssh of the machine's plays a part.
	cmd.Env = append(filteredEnv("KUBECONFIG", "HOME", "SSH_AUTH_SOCK"), "HOME="+t.TempDir())
	return cmd
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// testSSH: `wharf ssh` runs a command end to end and returns its exit
// status (0 and non-zero), refuses a host whose key differs from
// status.sshHostKey, and holds an interactive session for more than 60 s
// (many keep-alive periods of the test config) while it sits idle.
func testSSH(t *testing.T, e *env) {
	a, b := sshd.Start(t), sshd.Start(t)
	// The agent reaches sshd through a relay, so the test can later put a
	// host with another key behind the same edge.
	sshRelay := startRelay(t, a.Addr)
	_, _, ed := e.connectEdge(t, "web-1", v1alpha1.TypeServer, agentOptions{sshAddr: sshRelay.Addr})
	if !strings.HasSuffix(ed.Status.URL, "/edges/web-1/ssh") {
		t.Errorf("status.URL %q", ed.Status.URL)
	}
	if f := strings.Fields(ed.Status.SSHHostKey); len(f) < 2 || f[0]+" "+f[1] != a.HostKey {
		t.Fatalf("status.sshHostKey %q, want sshd's %q", ed.Status.SSHHostKey, a.HostKey)
	}
	kc := e.userKubeconfig(t, "alice", aliceToken, labWorkspace)

	out, err := e.wharfSSH(t, kc, a, "web-1", "echo", "hello-through-edge", "&&", "hostname").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "hello-through-edge") {
		t.Fatalf("wharf ssh web-1 -- echo: %v\n%s", err, out)
	}
	if code := exitCode(e.wharfSSH(t, kc, a, "web-1", "exit", "7").Run()); code != 7 {
		t.Errorf("wharf ssh -- exit 7 exited %d", code)
	}
	if code := exitCode(e.wharfSSH(t, kc, a, "web-1", "true").Run()); code != 0 {
		t.Errorf("wharf ssh -- true exited %d", code)
	}
	// The session is end to end: sshd saw a connection from the agent's
	// side, the hub only bytes. sshd logged alice's key being accepted.
	if !strings.Contains(a.Log(), "Accepted publickey for "+a.User) {
		t.Errorf("sshd never accepted the key:\n%s", a.Log())
	}

	// `wharf ssh-proxy` on its own, from an ssh_config as a person would
	// write it, with the key from status.sshHostKey pinned by hand.
	home := t.TempDir()
	known := filepath.Join(home, "known_hosts")
	if err := os.WriteFile(known, []byte("web-1.edge "+ed.Status.SSHHostKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(home, "ssh_config")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`Host web-1.edge
  ProxyCommand %s ssh-proxy web-1 --kubeconfig %s
  HostKeyAlias web-1.edge
  UserKnownHostsFile %s
  StrictHostKeyChecking yes
  User %s
  IdentityFile %s
  IdentitiesOnly yes
  BatchMode yes
`, wharfBinary(t), kc, known, a.User, a.ClientKey)), 0o600); err != nil {
		t.Fatal(err)
	}
	plain := exec.Command("ssh", "-F", cfg, "web-1.edge", "echo", "via-ssh-config")
	plain.Env = append(filteredEnv("KUBECONFIG", "HOME", "SSH_AUTH_SOCK"), "HOME="+home)
	if out, err := plain.CombinedOutput(); err != nil || !strings.Contains(string(out), "via-ssh-config") {
		t.Errorf("ssh -F <config with wharf ssh-proxy>: %v\n%s", err, out)
	}

	// Another host behind the same edge: its key is not the pinned one.
	sshRelay.Retarget(b.Addr)
	out, err = e.wharfSSH(t, kc, a, "web-1", "echo", "should-not-run").CombinedOutput()
	if err == nil || strings.Contains(string(out), "should-not-run") ||
		!(strings.Contains(string(out), "HOST IDENTIFICATION HAS CHANGED") || strings.Contains(string(out), "Host key verification failed")) {
		t.Errorf("a host with another key was accepted: %v\n%s", err, out)
	}
	if strings.Contains(b.Log(), "Accepted publickey") {
		t.Errorf("the impostor host got a login")
	}
	sshRelay.Retarget(a.Addr)

	testSSHLongSession(t, e, kc, a)
}

// testSSHLongSession drives a shell on a forced tty, stays idle for 65 s
// and uses it again.
func testSSHLongSession(t *testing.T, e *env, kc string, s *sshd.Server) {
	cmd := e.wharfSSH(t, kc, s, "web-1")
	cmd.Args = append(cmd.Args, "-o", "RequestTTY=force")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	seen := &testutil.Buffer{}
	go func() {
		br := bufio.NewReader(pr)
		buf := make([]byte, 4096)
		for {
			n, err := br.Read(buf)
			_, _ = seen.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); _ = pw.Close() }()
	// The shell computes the marker, so its echo of the typed line
	// (mark-$((40+2))) is never mistaken for the output (mark-42).
	say := func(expr, want string) {
		t.Helper()
		if _, err := fmt.Fprintf(stdin, "echo mark-$((%s))\n", expr); err != nil {
			t.Fatalf("writing to the session: %v\n%s", err, seen.String())
		}
		eventually(t, time.Minute, func() error {
			select {
			case err := <-done:
				t.Fatalf("the session ended (%v):\n%s", err, seen.String())
			default:
			}
			if !strings.Contains(seen.String(), want) {
				return fmt.Errorf("no %s yet", want)
			}
			return nil
		})
	}
	say("40+2", "mark-42")
	start := time.Now()
	time.Sleep(65 * time.Second)
	say("50+3", "mark-53")
	t.Logf("interactive session alive after %s idle", time.Since(start).Round(time.Second))
	_, _ = io.WriteString(stdin, "exit 3\n")
	select {
	case err := <-done:
		if code := exitCode(err); code != 3 {
			t.Errorf("the session exited %d, want 3:\n%s", code, seen.String())
		}
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("the session did not end:\n%s", seen.String())
	}
}
