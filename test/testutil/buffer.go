// Package testutil holds the few helpers every process-driving test needs:
// a buffer a child process may write while the test reads it, the tail of
// a log for failure messages, the binaries `make build` made (Binary) or a
// test-only program built once (Build), and one running wharf-hub
// (StartHub) for test packages outside test/e2e/hub. It imports nothing
// from the hub (it starts the binary), so any test package and fixture
// (such as test/sshd) may use it.
package testutil

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer collects a process's output. exec.Cmd writes Stdout/Stderr from
// its own goroutines while the test reads String, so every access locks.
type Buffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

// Write implements io.Writer.
func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Tail returns the last n lines of s, for failure messages that would
// otherwise print a whole process log.
func Tail(s string, n int) string {
	l := strings.Split(s, "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
