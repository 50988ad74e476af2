package agent

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/wharfhub/wharf/providers/edges/protocol"
	"github.com/wharfhub/wharf/test/sshd"
)

// TestServerEdgeSSH: a server edge reports the real sshd's host key on
// connect, and an SSH session through the tunnel runs end to end, host key
// pinned to what the agent reported, exit status returned.
func TestServerEdgeSSH(t *testing.T) {
	s := sshd.Start(t)
	hub := newTestHub(t, "c0ffee0000000003", "web-1")
	_, _ = runAgent(t, Config{StateDir: filepath.Join(t.TempDir(), "st"), Join: hub.bundle("server", "tok-ssh"), SSHAddr: s.Addr})
	<-hub.dialers

	hub.mu.Lock()
	reported := hub.seen[protocol.HeaderAgentSSHHostKey]
	hub.mu.Unlock()
	if fields(reported) != fields(s.HostKey) {
		t.Fatalf("agent reported host key %q, sshd has %q", reported, s.HostKey)
	}
	hostKey, _, _, _, err := ssh.ParseAuthorizedKey([]byte(reported))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(s.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := hub.dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cc, chans, reqs, err := ssh.NewClientConn(conn, s.Addr, &ssh.ClientConfig{
		User: s.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: ssh.FixedHostKey(hostKey),
	})
	if err != nil {
		t.Fatalf("ssh through the tunnel: %v\nsshd log:\n%s", err, s.Log())
	}
	client := ssh.NewClient(cc, chans, reqs)
	defer client.Close()

	run := func(cmd string, stdin io.Reader) (string, error) {
		sess, err := client.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		sess.Stdin = stdin
		out, err := sess.Output(cmd)
		return string(out), err
	}
	if out, err := run("echo hello-from-edge", nil); err != nil || out != "hello-from-edge\n" {
		t.Fatalf("echo: %q, %v", out, err)
	}
	_, err = run("exit 7", nil)
	var exit *ssh.ExitError
	if !errors.As(err, &exit) || exit.ExitStatus() != 7 {
		t.Fatalf("exit status: %v", err)
	}
	payload := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	if out, err := run("wc -c", bytes.NewReader(payload)); err != nil || strings.TrimSpace(out) != "1048576" {
		t.Fatalf("wc -c of 1 MiB: %q, %v", out, err)
	}

	// A different key fails the pinned check (the CLI's refusal).
	conn2, err := hub.dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, err = ssh.NewClientConn(conn2, s.Addr, &ssh.ClientConfig{
		User: s.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: ssh.FixedHostKey(signer.PublicKey()),
	})
	if err == nil {
		t.Fatal("a wrong host key was accepted")
	}
}

func fields(key string) string {
	f := strings.Fields(key)
	if len(f) < 2 {
		return key
	}
	return f[0] + " " + f[1]
}

// TestPipeHalfClose: when the tunnel side finishes sending, sshd's side is
// half-closed, and what the server still sends afterwards arrives.
func TestPipeHalfClose(t *testing.T) {
	// A server that reads to EOF, then answers with the byte count.
	srv, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go func() {
		c, err := srv.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		n, _ := io.Copy(io.Discard, c)
		_, _ = io.WriteString(c, strings.Repeat("x", int(n)))
	}()
	// "a" is the tunnel end (a TCP pair here, so the test can half-close
	// its far side the way an ssh client ends its input).
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer front.Close()
	accepted := make(chan net.Conn, 1)
	go func() { c, _ := front.Accept(); accepted <- c }()
	client, err := net.Dial("tcp", front.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	a := <-accepted
	b, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { pipe(context.Background(), a, b); close(done) }()
	_, _ = io.WriteString(client, "12345")
	_ = client.(*net.TCPConn).CloseWrite()
	_ = client.SetReadDeadline(time.Now().Add(30 * time.Second))
	got, err := io.ReadAll(client)
	if err != nil || string(got) != "xxxxx" {
		t.Fatalf("after half-close got %q, %v", got, err)
	}
	<-done
}
