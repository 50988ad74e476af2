package plugin_test

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// processAlive treats zombies as dead: an orphan reparented to a PID 1 that
// does not reap still holds its pid but runs nothing.
func processAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err == nil {
		// Format: pid (comm) state ...; comm may contain spaces.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
			return b[i+2] != 'Z' && b[i+2] != 'X'
		}
		return true
	}
	if !errors.Is(err, os.ErrNotExist) {
		return syscall.Kill(pid, 0) == nil
	}
	if _, statErr := os.Stat("/proc/self/stat"); statErr == nil {
		return false // procfs present, pid absent
	}
	return syscall.Kill(pid, 0) == nil
}

// waitGone waits for pid to die, failing only after a bound generous enough
// that it never trips on a loaded machine.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still alive", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
