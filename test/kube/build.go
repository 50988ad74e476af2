package kube

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// deadlineMargin is how long before the test binary's -timeout a waiting
// test gives up on a running build, so it fails with an explanation rather
// than the testing package's bare timeout panic.
const deadlineMargin = time.Minute

// BuildTools runs test/tools/build.sh and returns the cache directory that
// holds kube-apiserver, etcd and kubectl. The script returns at once when the
// cache for the current go.mod/go.sum and flags is complete, and serialises
// concurrent builds with a lock, so parallel test packages are safe.
func BuildTools() (string, error) { return buildTools(time.Time{}) }

// buildToolsFor is BuildTools bounded by t's deadline (go test -timeout,
// 10m by default), which a cold build on a busy 2-core machine can exceed.
func buildToolsFor(t testing.TB) (string, error) {
	var giveUp time.Time
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := d.Deadline(); ok {
			giveUp = dl.Add(-deadlineMargin)
		}
	}
	return buildTools(giveUp)
}

// buildTools runs the script with its output in files, not pipes: if the
// test gives up at giveUp, the build carries on detached and fills the
// cache for the next run instead of dying of SIGPIPE on a closed pipe.
// Progress is copied to this process's stderr while it waits.
func buildTools(giveUp time.Time) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return runBuildScript(filepath.Join(root, "test", "tools", "build.sh"), giveUp, os.Stderr, "")
}

// runBuildScript is buildTools for any script, progress copied to progress,
// output files in tmpDir ("" for the system's).
func runBuildScript(script string, giveUp time.Time, progress io.Writer, tmpDir string) (string, error) {
	outF, err := os.CreateTemp(tmpDir, "wharf-kube-tools-*.out")
	if err != nil {
		return "", fmt.Errorf("build output file: %w", err)
	}
	logF, err := os.CreateTemp(tmpDir, "wharf-kube-tools-*.log")
	if err != nil {
		outF.Close()
		return "", fmt.Errorf("build log file: %w", err)
	}
	cmd := exec.Command("bash", script)
	cmd.Stdout, cmd.Stderr = outF, logF
	startErr := cmd.Start()
	outF.Close()
	logF.Close()
	if startErr != nil {
		return "", fmt.Errorf("start %s: %w", script, startErr)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	tail := &logTail{path: logF.Name(), to: progress}
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	var expire <-chan time.Time
	if !giveUp.IsZero() {
		timer := time.NewTimer(time.Until(giveUp))
		defer timer.Stop()
		expire = timer.C
	}
	for {
		select {
		case err := <-done:
			tail.copy()
			out, _ := os.ReadFile(outF.Name())
			os.Remove(outF.Name())
			os.Remove(logF.Name())
			if err != nil {
				return "", fmt.Errorf("%s: %w", script, err)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if lines[len(lines)-1] == "" {
				return "", fmt.Errorf("%s printed no directory", script)
			}
			return lines[len(lines)-1], nil
		case <-tick.C:
			tail.copy()
		case <-expire:
			tail.copy()
			return "", fmt.Errorf("kube tools still building as the test timeout nears; the build "+
				"(pid %d, log %s) goes on in the background and the next run reuses it. "+
				"Run `make kube-tools` first, or give go test a longer -timeout (30m covers a cold build)",
				cmd.Process.Pid, logF.Name())
		}
	}
}

// logTail copies what was appended to a file since the last call.
type logTail struct {
	path   string
	offset int64
	to     io.Writer
}

func (l *logTail) copy() {
	f, err := os.Open(l.path)
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.Seek(l.offset, io.SeekStart); err != nil {
		return
	}
	var buf bytes.Buffer
	n, _ := io.Copy(&buf, f)
	l.offset += n
	l.to.Write(buf.Bytes())
}

// RepoRoot finds the repository root by walking up from the working
// directory (go test runs each package in its own directory) to the
// directory that holds test/tools/go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("getwd: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "test", "tools", "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root (with test/tools/go.mod) not found above the working directory")
		}
		dir = parent
	}
}
