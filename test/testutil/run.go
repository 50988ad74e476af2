package testutil

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// runTimeout bounds one command, so a hung CLI fails its test instead of
// holding the whole test binary until go test's own timeout.
const runTimeout = 3 * time.Minute

// Run runs bin with args and stdin, in the test's environment plus env
// (later entries win, as exec.Cmd does), and returns stdout, stderr and the
// exit code. A non-zero exit is a result, not a failure: tests of a CLI
// check its exit codes. Only a command that cannot be started fails the
// test; one killed at the time limit returns the code -1.
func Run(t testing.TB, env []string, stdin, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errOut.String(), 0
	case errors.As(err, &ee):
		return out.String(), errOut.String(), ee.ExitCode()
	default:
		t.Fatalf("%s: %v", bin, err)
		return "", "", -1
	}
}

// Eventually polls cond every quarter second until it returns nil, and fails
// the test with cond's last error once timeout has passed. Tests wait for
// a state this way rather than for a fixed time.
func Eventually(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s: %v", timeout, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
