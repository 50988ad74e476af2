package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	edgesv1 "github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/test/sshd"
	"github.com/wharfhub/wharf/test/testutil"
)

// TestEdgeCLISSHFlow: a server edge joined with the printed line (plus
// its --ssh-addr hint), then `wharf ssh` runs commands end to end with
// the host key pinned and returns their exit status, and the
// `wharf ssh-config` block works with plain ssh.
func TestEdgeCLISSHFlow(t *testing.T) {
	srv := sshd.Start(t)
	h := startE2EHub(t)
	alice := loginE2E(t, h, aliceHubToken)
	setupEdgesWorkspace(t, h, alice, "ssh-ws")
	ws := "root:ssh-ws"

	out := alice.must(t, "edge", "create", "web-1", "--type", "server", "-w", ws)
	var runLine string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "wharf-agent run ") {
			runLine = l
		}
	}
	if runLine == "" || !strings.Contains(out, "--ssh-addr") {
		t.Fatalf("edge create printed:\n%s", out)
	}
	// Until the agent reports the sshd's key there is nothing to pin.
	if _, errOut, code := alice.run(t, "ssh", "web-1", "-w", ws, "--", "true"); code == 0 || !strings.Contains(errOut, "has not reported its SSH host key") {
		t.Errorf("ssh before the agent connected: exit %d %s", code, errOut)
	}
	// The printed --ssh-addr hint points the agent at the fixture's sshd.
	startVerbatimAgent(t, runLine+" --ssh-addr "+srv.Addr, "")
	testutil.Eventually(t, 2*time.Minute, func() error {
		var e edgesv1.Edge
		if err := json.Unmarshal([]byte(alice.must(t, "edge", "get", "web-1", "-w", ws, "-o", "json")), &e); err != nil {
			return err
		}
		if e.Status.Phase != edgesv1.PhaseReady || e.Status.SSHHostKey == "" {
			return fmt.Errorf("edge web-1: phase %q, host key %q", e.Status.Phase, e.Status.SSHHostKey)
		}
		if f := strings.Fields(e.Status.SSHHostKey); len(f) < 2 || f[0]+" "+f[1] != srv.HostKey {
			return fmt.Errorf("status.sshHostKey %q is not the sshd's %q", e.Status.SSHHostKey, srv.HostKey)
		}
		return nil
	})

	sshBase := []string{"ssh", "web-1", "-w", ws, "-l", srv.User, "-i", srv.ClientKey, "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes"}
	got, errOut, code := alice.run(t, append(sshBase, "--", "echo", "hello-from-edge")...)
	if code != 0 || got != "hello-from-edge\n" {
		t.Fatalf("wharf ssh echo: exit %d %q %s", code, got, errOut)
	}
	if _, errOut, code := alice.run(t, append(sshBase, "--", "exit", "7")...); code != 7 {
		t.Fatalf("wharf ssh exit 7: exit %d %s", code, errOut)
	}

	// ssh-config: the Host block with plain ssh, the pinned key from
	// --known-hosts; a different key under the same alias is refused.
	block := alice.must(t, "ssh-config", "web-1", "-w", ws)
	known := alice.must(t, "ssh-config", "web-1", "-w", ws, "--known-hosts")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "ssh_config")
	writeSSHFiles := func(knownHosts string) {
		kh := filepath.Join(dir, "known_hosts")
		if err := os.WriteFile(kh, []byte(knownHosts), 0o600); err != nil {
			t.Fatal(err)
		}
		extra := fmt.Sprintf("    UserKnownHostsFile %s\n    GlobalKnownHostsFile /dev/null\n    User %s\n    IdentityFile %s\n    IdentitiesOnly yes\n    BatchMode yes\n", kh, srv.User, srv.ClientKey)
		if err := os.WriteFile(cfg, []byte(block+extra), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeSSHFiles(known)
	got, errOut, code = testutil.Run(t, alice.env, "", "ssh", "-F", cfg, "web-1", "echo", "via-ssh-config")
	if code != 0 || got != "via-ssh-config\n" {
		t.Fatalf("ssh -F <ssh-config block>: exit %d %q %s", code, got, errOut)
	}
	other := strings.Fields(known)[0] + " " + hostKey(t) // a fresh key, not the sshd's
	writeSSHFiles(other + "\n")
	if _, errOut, code := testutil.Run(t, alice.env, "", "ssh", "-F", cfg, "web-1", "true"); code != 255 || !strings.Contains(errOut, "Host key verification failed") {
		t.Fatalf("a different pinned key: exit %d %s", code, errOut)
	}
}
