package tenantfilter

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// mainTB lets TestMain start the shared kube fixture, whose API takes a
// testing.TB: there is no *testing.T before m.Run. It implements only what
// the fixture calls; Fatal* panics with mainFatal, which TestMain recovers
// to run the cleanups and exit non-zero. The embedded interface is nil:
// calling any other method panics, which is the honest outcome for a
// harness bug.
type mainTB struct {
	testing.TB
	mu       sync.Mutex // guards the fields below
	cleanups []func()
	failed   bool
}

type mainFatal struct{ msg string }

func (m *mainTB) Helper()      {}
func (m *mainTB) Name() string { return "TestMain" }

func (m *mainTB) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "fixture: "+format+"\n", args...)
}

func (m *mainTB) Log(args ...any) { fmt.Fprintln(os.Stderr, append([]any{"fixture:"}, args...)...) }

func (m *mainTB) Errorf(format string, args ...any) {
	m.setFailed()
	m.Logf(format, args...)
}

func (m *mainTB) Error(args ...any) { m.Errorf("%s", fmt.Sprint(args...)) }

func (m *mainTB) Fatalf(format string, args ...any) {
	m.setFailed()
	panic(mainFatal{fmt.Sprintf(format, args...)})
}

func (m *mainTB) Fatal(args ...any) { m.Fatalf("%s", fmt.Sprint(args...)) }

func (m *mainTB) FailNow() { m.Fatalf("FailNow") }

func (m *mainTB) Fail() { m.setFailed() }

func (m *mainTB) setFailed() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failed = true
}

// Failed reports a fixture failure or (after m.Run) a failed test, so the
// fixture keeps and prints its logs when anything failed.
func (m *mainTB) Failed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.failed
}

func (m *mainTB) Cleanup(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cleanups = append(m.cleanups, f)
}

func (m *mainTB) TempDir() string {
	d, err := os.MkdirTemp("", "wharf-tenantfilter-e2e-")
	if err != nil {
		m.Fatalf("temp dir: %v", err)
	}
	m.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

// runCleanups runs the registered cleanups last-in first-out, as testing does.
func (m *mainTB) runCleanups() {
	m.mu.Lock()
	cs := m.cleanups
	m.cleanups = nil
	m.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}
