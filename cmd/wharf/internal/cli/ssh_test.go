package cli

import (
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	edgesv1 "github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
)

func hostKey(t *testing.T) string {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pk)))
}

// TestKnownHostsLine: the pinned line is exactly one parsed key under the
// alias; an empty or crafted status.sshHostKey is refused.
func TestKnownHostsLine(t *testing.T) {
	e := testEdge(edgesv1.TypeServer)
	if _, err := knownHostsLine(e, "abcdefghij012345"); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Fatalf("empty host key: %v", err)
	}
	key := hostKey(t)
	e.Status.SSHHostKey = key + " root@edge"
	got, err := knownHostsLine(e, "abcdefghij012345")
	if err != nil {
		t.Fatal(err)
	}
	if want := "wharf-edge.abcdefghij012345.lab " + key + "\n"; got != want {
		t.Fatalf("line %q, want %q", got, want)
	}
	for _, bad := range []string{
		"@cert-authority * " + key,
		key + "\n" + hostKey(t),
		"not a key",
	} {
		e.Status.SSHHostKey = bad
		if line, err := knownHostsLine(e, "abcdefghij012345"); err == nil {
			t.Errorf("host key %q accepted as %q", bad, line)
		}
	}
}

// TestProxyCommandQuoting runs the ProxyCommand through /bin/sh as ssh
// does (after undoing ssh's %% escape): every word arrives intact.
func TestProxyCommandQuoting(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "my 'odd' %d $dir", "config")
	if err := os.MkdirAll(filepath.Dir(kc), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(writeKubeconfig(t, nil), kc); err != nil {
		t.Fatal(err)
	}
	c, err := hubFlags{kubeconfig: kc}.connect()
	if err != nil {
		t.Fatal(err)
	}
	pc, err := proxyCommand(c, "web-1", "abcdefghij012345")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ReplaceAll(pc, "%%", ""), "%") {
		t.Fatalf("unescaped %% in %q", pc)
	}
	words := strings.SplitN(strings.ReplaceAll(pc, "%%", "%"), " ", 2)
	// Replace the executable with a printer of its arguments.
	script := `printargs() { for a in "$@"; do printf '%s\n' "$a"; done; }; printargs ` + words[1]
	got, err := exec.Command("/bin/sh", "-c", script).Output()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ssh-proxy", "web-1", "-w", "abcdefghij012345", "--kubeconfig", kc, "--context", "hub"}
	if g := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n"); strings.Join(g, "\x00") != strings.Join(want, "\x00") {
		t.Fatalf("shell saw %q, want %q", g, want)
	}
}

func TestSSHArgs(t *testing.T) {
	got := sshArgs(sshOptions{login: "root", identity: "/k", options: []string{"StrictHostKeyChecking=no", "ServerAliveInterval=5"}},
		"PROXY", "alias", "/tmp/kh", []string{"exit", "3"})
	want := "-o ProxyCommand=PROXY -o HostKeyAlias=alias -o UserKnownHostsFile=/tmp/kh -o GlobalKnownHostsFile=/dev/null " +
		"-o StrictHostKeyChecking=yes -o UpdateHostKeys=no -o CheckHostIP=no " +
		"-o StrictHostKeyChecking=no -o ServerAliveInterval=5 -o ServerAliveInterval=15 -l root -i /k alias -- exit 3"
	if strings.Join(got, " ") != want {
		t.Fatalf("argv:\n%s\nwant:\n%s", strings.Join(got, " "), want)
	}
	// The system ssh resolves it: the pinning options win over -o.
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("no ssh binary")
	}
	out, err := exec.Command("ssh", append([]string{"-G"}, got...)...).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"stricthostkeychecking true", "hostkeyalias alias", "userknownhostsfile /tmp/kh", "serveraliveinterval 5", "user root", "proxycommand PROXY"} {
		if !strings.Contains(string(out), "\n"+line+"\n") {
			t.Errorf("ssh -G lacks %q", line)
		}
	}
}
