package ha

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/wharfhub/wharf/test/testutil"
)

// proc is one child process of the test bed, restartable with the same
// arguments.
type proc struct {
	name string
	bin  string
	args []string
	dir  string

	cmd    *exec.Cmd
	log    *testutil.Buffer
	exited chan struct{}
	err    error
}

func (p *proc) start(t *testing.T) {
	t.Helper()
	p.cmd = exec.Command(p.bin, p.args...)
	p.cmd.Dir = p.dir
	if p.log == nil {
		p.log = &testutil.Buffer{}
	}
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	// Own process group, so kill -9 of a hub can be told apart from the
	// kill of its plugins (which the hub cannot do once killed).
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", p.name, err)
	}
	exited := make(chan struct{})
	p.exited = exited
	cmd := p.cmd
	go func() { p.err = cmd.Wait(); close(exited) }()
}

func (p *proc) running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// kill9 is the crash: no chance to clean up.
func (p *proc) kill9() {
	if p.running() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
	}
}

// term sends SIGTERM and waits up to timeout for the exit; it returns the
// exit error (nil for a clean exit 0).
func (p *proc) term(timeout time.Duration) error {
	if !p.running() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.err
	case <-time.After(timeout):
		p.kill9()
		return fmt.Errorf("%s did not exit within %s of SIGTERM", p.name, timeout)
	}
}

// cleanup stops p at the end of the test and prints its log if it failed.
func (p *proc) cleanup(t *testing.T) {
	t.Cleanup(func() {
		if p.running() {
			_ = p.term(30 * time.Second)
		}
		if t.Failed() && p.log != nil {
			t.Logf("--- %s log (tail) ---\n%s", p.name, testutil.Tail(p.log.String(), 60))
		}
	})
}

// freePorts reserves n distinct loopback ports (until the caller binds them).
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return ports
}

func mkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}
