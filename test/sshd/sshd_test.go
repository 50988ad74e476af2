package sshd

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSSHRunsCommandAndChecksHostKey drives the system ssh against the
// fixture: a command runs and its exit status comes back, and a
// known_hosts entry with another key is refused.
func TestSSHRunsCommandAndChecksHostKey(t *testing.T) {
	s := Start(t)
	out, err := exec.Command("ssh", append(s.SSHArgs(""), "127.0.0.1", "echo", "hello-from-sshd")...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "hello-from-sshd") {
		t.Fatalf("ssh true: %v\n%s", err, out)
	}
	err = exec.Command("ssh", append(s.SSHArgs(""), "127.0.0.1", "exit 7")...).Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("exit status: %v, want 7", err)
	}

	// Another server's host key for the same address must be refused.
	other := Start(t)
	wrong := filepath.Join(t.TempDir(), "known_hosts")
	line := "[127.0.0.1]:" + strings.TrimPrefix(s.Addr, "127.0.0.1:") + " " + other.HostKey + "\n"
	if err := os.WriteFile(wrong, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append(s.SSHArgs(wrong), "127.0.0.1", "true")
	out, err = exec.Command("ssh", args...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "HOST IDENTIFICATION HAS CHANGED") {
		t.Fatalf("mismatched host key accepted: %v\n%s", err, out)
	}
	if !strings.HasPrefix(s.HostKey, "ssh-ed25519 ") {
		t.Fatalf("host key %q", s.HostKey)
	}
}
