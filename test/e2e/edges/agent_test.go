package edges

import (
	"github.com/wharfhub/wharf/test/testutil"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// agentOptions are wharf-agent run's flags.
type agentOptions struct {
	join       string // the bundle; "" runs from the state dir alone
	stateDir   string // default: a fresh temp dir
	kubeconfig string
	sshAddr    string
	identity   string // impersonate (default) or agent
}

// agentProc is a running wharf-agent.
type agentProc struct {
	t        *testing.T
	opts     agentOptions
	StateDir string
	cmd      *exec.Cmd
	log      *testutil.Buffer
	exited   chan struct{}
	exitErr  error
}

// startAgent runs bin/wharf-agent; it is stopped on t.Cleanup and its log
// printed if the test failed.
func startAgent(t *testing.T, opts agentOptions) *agentProc {
	t.Helper()
	if opts.stateDir == "" {
		opts.stateDir = filepath.Join(t.TempDir(), "agent-state")
	}
	a := &agentProc{t: t, opts: opts, StateDir: opts.stateDir, log: &testutil.Buffer{}}
	a.start(opts.join)
	t.Cleanup(func() {
		a.stop()
		if t.Failed() {
			t.Logf("wharf-agent (%s) log:\n%s", a.StateDir, testutil.Tail(a.log.String(), 200))
		}
	})
	return a
}

func (a *agentProc) start(join string) {
	a.t.Helper()
	args := []string{"run", "--state-dir", a.StateDir}
	if join != "" {
		args = append(args, "--join", join)
	}
	if a.opts.kubeconfig != "" {
		args = append(args, "--kubeconfig", a.opts.kubeconfig)
	}
	if a.opts.sshAddr != "" {
		args = append(args, "--ssh-addr", a.opts.sshAddr)
	}
	if a.opts.identity != "" {
		args = append(args, "--identity", a.opts.identity)
	}
	a.cmd = exec.Command(agentBinary(a.t), args...)
	// No KUBECONFIG from the test's environment: the agent must use the
	// flag it was given.
	a.cmd.Env = append(filteredEnv("KUBECONFIG"), "HOME="+filepath.Dir(a.StateDir))
	a.cmd.Stdout, a.cmd.Stderr = a.log, a.log
	if err := a.cmd.Start(); err != nil {
		a.t.Fatal(err)
	}
	exited := make(chan struct{})
	a.exited = exited
	cmd := a.cmd
	go func() { a.exitErr = cmd.Wait(); close(exited) }()
}

// restart stops the agent and runs it again from its state dir alone,
// with no join bundle (so no token).
func (a *agentProc) restart() {
	a.t.Helper()
	a.stop()
	a.start("")
}

func (a *agentProc) stop() {
	if a.cmd == nil || a.cmd.Process == nil {
		return
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.exited:
	case <-time.After(20 * time.Second):
		_ = a.cmd.Process.Kill()
		<-a.exited
	}
	a.cmd = nil
}

// running reports whether the agent process is still alive.
func (a *agentProc) running() bool {
	select {
	case <-a.exited:
		return false
	default:
		return a.cmd != nil
	}
}

func (a *agentProc) pid() int { return a.cmd.Process.Pid }

func filteredEnv(drop ...string) []string {
	var out []string
next:
	for _, kv := range os.Environ() {
		for _, d := range drop {
			if len(kv) > len(d) && kv[:len(d)+1] == d+"=" {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}
