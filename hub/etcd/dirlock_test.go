package etcd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	clocktesting "k8s.io/utils/clock/testing"
)

// A second lockDir on a held dir waits, polling, and takes the lock once
// the holder lets go; one that waits past its limit names the holder.
func TestLockDirWaitsForHolder(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clk := clocktesting.NewFakeClock(time.Unix(1_000_000, 0))
	first, err := lockDir(ctx, clk, dir, time.Minute)
	if err != nil {
		t.Fatal(err)
	}

	type result struct {
		err error
	}
	got := make(chan result, 1)
	go func() {
		l, err := lockDir(ctx, clk, dir, time.Minute)
		if err == nil {
			defer l.Close()
		}
		got <- result{err}
	}()
	for !clk.HasWaiters() { // the second is polling
		time.Sleep(time.Millisecond)
	}
	select {
	case r := <-got:
		t.Fatalf("second lock returned while the first is held: %v", r.err)
	default:
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	clk.Step(dirLockPoll)
	if r := <-got; r.err != nil {
		t.Fatalf("second lock after the first was released: %v", r.err)
	}

	held, err := lockDir(ctx, clk, dir, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	timedOut := make(chan error, 1)
	go func() {
		_, err := lockDir(ctx, clk, dir, time.Minute)
		timedOut <- err
	}()
	for i := 0; i < 700; i++ { // 70 s of polls, past the minute
		for !clk.HasWaiters() {
			select {
			case err := <-timedOut:
				want := "pid " + strconv.Itoa(os.Getpid())
				if !errors.Is(err, errDirInUse) || !strings.Contains(err.Error(), want) {
					t.Fatalf("waiting past the limit: %v, want %v naming %q", err, errDirInUse, want)
				}
				return
			default:
				time.Sleep(time.Millisecond)
			}
		}
		clk.Step(dirLockPoll)
	}
	t.Fatal("lockDir still waiting 70 s past a 1 m limit")
}

// A hub restarted on its data dir while the previous one is still shutting
// down must end up with a working socket: etcd's unix listener removes the
// socket path both when it opens and when it closes, so without the dir
// lock the old member's Close deleted the new member's socket.
func TestRestartWhileOldMemberStops(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "etcd")
	old, err := StartEmbedded(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan *Embedded, 1)
	failed := make(chan error, 1)
	go func() {
		e, err := StartEmbedded(ctx, dir)
		if err != nil {
			failed <- err
			return
		}
		started <- e
	}()
	// The old member is closed only once the new one waits on the lock:
	// this process then has the lock file open twice.
	for openCount(t, filepath.Join(dir, lockName)) < 2 {
		time.Sleep(time.Millisecond)
	}
	old.Close()
	var e *Embedded
	select {
	case e = <-started:
	case err := <-failed:
		t.Fatalf("restart: %v", err)
	}
	defer e.Close()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{e.ClientURL}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := c.Put(cctx, "/after-restart", "v"); err != nil {
		t.Fatalf("put through the restarted member's socket %s: %v", e.ClientURL, err)
	}
}

// openCount is how many of this process's file descriptors are open on path.
func openCount(t *testing.T, path string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && target == path {
			n++
		}
	}
	return n
}
