package edgesbench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
)

// agentProc is one real wharf-agent process.
type agentProc struct {
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	started time.Time
}

// startAgent runs `wharf-agent run --join <bundle> --state-dir <dir>` with
// extra flags, the way a person pastes the printed join line.
func startAgent(e *env, dir, bundle string, extra ...string) (*agentProc, error) {
	bin := filepath.Join(e.binDir, "wharf-agent")
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("wharf-agent (run make build): %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	a := &agentProc{logPath: filepath.Join(dir, "agent.log"), exited: make(chan struct{})}
	logf, err := os.Create(a.logPath)
	if err != nil {
		return nil, err
	}
	args := append([]string{"run", "--join", bundle, "--state-dir", filepath.Join(dir, "state")}, extra...)
	a.cmd = exec.Command(bin, args...)
	a.cmd.Stdout, a.cmd.Stderr = logf, logf
	a.started = time.Now()
	if err := a.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start wharf-agent: %w", err)
	}
	go func() { _ = a.cmd.Wait(); logf.Close(); close(a.exited) }()
	return a, nil
}

func (a *agentProc) stop() {
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.exited:
	case <-time.After(10 * time.Second):
		_ = a.cmd.Process.Kill()
		<-a.exited
	}
}

// annotate appends the agent's log tail to err.
func (a *agentProc) annotate(err error) error {
	b, _ := os.ReadFile(a.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return fmt.Errorf("%w\nwharf-agent log ends:\n%s", err, strings.Join(lines, "\n"))
}

// waitReady polls the Edge until it is Ready with a URL, and returns its
// status. It fails early if the agent exits.
func waitReady(ctx context.Context, e *env, a *agentProc, name string) (v1alpha1.EdgeStatus, error) {
	var st v1alpha1.EdgeStatus
	err := retry(ctx, 2*time.Minute, func() error {
		select {
		case <-a.exited:
			return fmt.Errorf("wharf-agent exited: %v", a.cmd.ProcessState)
		default:
		}
		var err error
		if st, err = e.edgeStatus(ctx, name); err != nil {
			return err
		}
		if st.Phase != v1alpha1.PhaseReady || st.URL == "" {
			return fmt.Errorf("edge %s: phase %q, URL %q", name, st.Phase, st.URL)
		}
		return nil
	})
	if err != nil {
		return st, a.annotate(err)
	}
	return st, nil
}
