// Package sshd is the end-to-end fixture for a real OpenSSH server: the
// system's /usr/sbin/sshd (Debian openssh-server) on a loopback port, with
// a freshly generated ed25519 host key and one generated client key in its
// authorized_keys. Tests use it as the sshd behind a server edge.
//
// Keys are made by the system ssh-keygen, the tool a person would use, so
// the fixture adds no Go dependency. Everything lives in t.TempDir(); the
// server runs in the foreground (-D -e) and is stopped on t.Cleanup, its
// log printed when the test failed.
package sshd

import (
	"context"
	"errors"
	"fmt"
	"github.com/wharfhub/wharf/test/testutil"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Binary is the sshd the fixture runs; Debian's openssh-server path.
const Binary = "/usr/sbin/sshd"

// Server is a running sshd.
type Server struct {
	// Addr is host:port of the listening sshd (127.0.0.1).
	Addr string
	// Port is Addr's port.
	Port int
	// ClientKey is the path of the private key sshd authorizes.
	ClientKey string
	// HostKey is the server's public host key in authorized_keys form
	// ("ssh-ed25519 AAAA..."), what an Edge's status.sshHostKey holds.
	HostKey string
	// KnownHosts is a known_hosts file that trusts HostKey for Addr.
	KnownHosts string
	// User is the login the client key is authorized for (the test's own
	// user: tests run as root).
	User string

	dir  string
	cmd  *exec.Cmd
	log  *testutil.Buffer
	done chan struct{}
}

// Start generates keys and a config, starts sshd on a free loopback port
// and waits until it answers with an SSH banner.
func Start(t testing.TB) *Server {
	t.Helper()
	if _, err := os.Stat(Binary); err != nil {
		t.Fatalf("sshd fixture: %v (install openssh-server; .ci/run does)", err)
	}
	// sshd refuses to start without its privilege-separation directory.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatalf("sshd fixture: %v", err)
	}
	dir := t.TempDir()
	s := &Server{dir: dir, log: &testutil.Buffer{}, done: make(chan struct{})}
	hostKey := filepath.Join(dir, "ssh_host_ed25519_key")
	s.ClientKey = filepath.Join(dir, "id_ed25519")
	for _, k := range []string{hostKey, s.ClientKey} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "wharf-test", "-f", k).CombinedOutput(); err != nil {
			t.Fatalf("sshd fixture: ssh-keygen: %v\n%s", err, out)
		}
	}
	pub, err := os.ReadFile(hostKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	// authorized_keys form without the comment, the shape sshd hands out.
	f := strings.Fields(string(pub))
	s.HostKey = f[0] + " " + f[1]
	clientPub, err := os.ReadFile(s.ClientKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	authKeys := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(authKeys, clientPub, 0o600); err != nil {
		t.Fatal(err)
	}
	s.User = currentUser()

	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		if lastErr = s.startOnce(hostKey, authKeys); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("sshd fixture: %v\n%s", lastErr, s.log.String())
	}
	s.KnownHosts = filepath.Join(dir, "known_hosts")
	line := fmt.Sprintf("[127.0.0.1]:%d %s\n", s.Port, s.HostKey)
	if err := os.WriteFile(s.KnownHosts, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("sshd log (%s):\n%s", s.Addr, s.log.String())
		}
	})
	return s
}

// startOnce picks a port and starts sshd on it; a port taken between the
// pick and sshd's bind is the fixture's race, so Start retries.
func (s *Server) startOnce(hostKey, authKeys string) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	s.Port = port
	s.Addr = fmt.Sprintf("127.0.0.1:%d", port)
	cfg := filepath.Join(s.dir, "sshd_config")
	// ClientAlive* lets sshd drop a dead client after ~45 s, but a live
	// one (answering) is never dropped: the long-session test relies on
	// the tunnel carrying these probes.
	conf := strings.Join([]string{
		"ListenAddress " + s.Addr,
		"HostKey " + hostKey,
		"AuthorizedKeysFile " + authKeys,
		"PidFile none",
		"UsePAM no",
		"StrictModes no",
		"PermitRootLogin prohibit-password",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"PubkeyAuthentication yes",
		"ClientAliveInterval 15",
		"ClientAliveCountMax 3",
		"LogLevel VERBOSE",
		"Subsystem sftp internal-sftp",
		"",
	}, "\n")
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		return err
	}
	s.cmd = exec.Command(Binary, "-D", "-e", "-f", cfg)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("starting sshd: %w", err)
	}
	done := make(chan struct{})
	s.done = done
	cmd := s.cmd
	go func() { _ = cmd.Wait(); close(done) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		select {
		case <-done:
			return errors.New("sshd exited before accepting")
		case <-ctx.Done():
			s.Stop()
			return fmt.Errorf("sshd on %s: no banner: %w", s.Addr, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
		if banner(s.Addr) {
			return nil
		}
	}
}

// banner reports whether addr answers with an SSH identification string.
func banner(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 4)
	n, _ := c.Read(buf)
	return n == 4 && string(buf) == "SSH-"
}

// Stop terminates sshd (idempotent).
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

// Log is sshd's output so far.
func (s *Server) Log() string { return s.log.String() }

// SSHArgs are the ssh options that reach this server directly with the
// client key and strict host key checking against knownHosts (KnownHosts
// when empty). ssh keeps the first value of an option, so a caller that
// wants another known_hosts must pass it here rather than append it.
func (s *Server) SSHArgs(knownHosts string) []string {
	if knownHosts == "" {
		knownHosts = s.KnownHosts
	}
	return []string{"-p", fmt.Sprint(s.Port), "-i", s.ClientKey,
		"-o", "UserKnownHostsFile=" + knownHosts, "-o", "StrictHostKeyChecking=yes",
		"-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", "-l", s.User}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func currentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	if out, err := exec.Command("id", "-un").Output(); err == nil {
		return strings.TrimSpace(string(out))
	}
	return "root"
}
