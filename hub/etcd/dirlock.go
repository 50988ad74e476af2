package etcd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/fileutil"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// lockName is the file in the member's directory whose lock the running
// member's process holds.
const lockName = "member.lock"

// dirLockWait is how long a starting member waits for the member before
// it on the same directory to stop: a restart right after SIGTERM is an
// ordinary operator action, and the old hub drains its requests first.
const dirLockWait = 60 * time.Second

// dirLockPoll is how often the lock is tried while another process holds it.
const dirLockPoll = 100 * time.Millisecond

// errDirInUse is returned when another process keeps the directory's
// lock for all of dirLockWait.
var errDirInUse = errors.New("in use by another process")

// lockDir takes the exclusive lock on dir's member.lock, waiting up to
// wait while another process holds it. Without it, a hub started on a data
// dir whose previous hub is still shutting down has its client socket
// removed from under it: etcd's unix listener deletes the socket path when
// it opens (the old member's socket) and again when it closes (by then
// the new member's socket). The lock is released with the returned file,
// or by the kernel when the process dies, so a crashed hub never leaves
// it held. The file names the holder's pid for the error a waiter gives.
func lockDir(ctx context.Context, clk clock.Clock, dir string, wait time.Duration) (*fileutil.LockedFile, error) {
	path := filepath.Join(dir, lockName)
	deadline := clk.Now().Add(wait)
	logged := false
	for {
		f, err := fileutil.TryLockFile(path, os.O_RDWR|os.O_CREATE, fileutil.PrivateFileMode)
		if err == nil {
			if err := writePid(f); err != nil {
				_ = f.Close()
				return nil, err
			}
			return f, nil
		}
		if !errors.Is(err, fileutil.ErrLocked) {
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		holder := holderOf(path)
		if !logged {
			klog.InfoS("Waiting for the previous member on this data dir to stop", "dir", dir, "pid", holder)
			logged = true
		}
		if !clk.Now().Before(deadline) {
			return nil, fmt.Errorf("etcd dir %s is %w (pid %s) after waiting %s: is another hub running with this --data-dir?", dir, errDirInUse, holder, wait)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("etcd dir %s is %w (pid %s): %w", dir, errDirInUse, holder, ctx.Err())
		case <-clk.After(dirLockPoll):
		}
	}
}

func writePid(f *fileutil.LockedFile) error {
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("writing %s: %w", f.Name(), err)
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		return fmt.Errorf("writing %s: %w", f.Name(), err)
	}
	return nil
}

// holderOf reads the pid the lock's holder wrote ("unknown" if none yet).
func holderOf(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || strings.TrimSpace(string(b)) == "" {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}
