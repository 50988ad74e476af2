package plugins

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"k8s.io/klog/v2"
)

// Sockets are removed by whoever created them when it closes them: the
// SDK's HTTP server and go-plugin's control listener in the plugin. A
// plugin that crashes or is killed (every restart after a failed health
// check, every kill of its process group, a hub that is SIGKILLed) removes
// nothing, and go-plugin picks a new random name each run, so the dead
// ones pile up. The host owns each provider's socket directory and runs at
// most one process per provider, so it removes them itself once that
// process is dead, and at start for every earlier run.

// removeSockets deletes the unix sockets directly inside dir, which must be
// one of the hub's own private directories: a real directory (not a
// symlink), mode 0700, owned by this process's user. Anything else is left
// alone, because deleting in a directory someone else controls could be
// steered at files that are not ours. Entries are inspected with lstat
// semantics and never followed: a symlink is not a socket, even when it
// points at one. It returns how many sockets it removed.
func removeSockets(dir string) (int, error) {
	if err := checkOwnPrivateDir(dir); err != nil {
		return 0, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", dir, err)
	}
	removed := 0
	var errs []error
	for _, e := range entries {
		// ReadDir reports the entry's own type, as lstat would.
		if e.Type()&fs.ModeSocket == 0 {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}

// checkOwnPrivateDir is the precondition of removeSockets.
func checkOwnPrivateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("socket dir: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("socket dir %s: not a directory (%v)", dir, fi.Mode().Type())
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		return fmt.Errorf("socket dir %s: mode %o, want 0700", dir, perm)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("socket dir %s: owned by uid %d, not the hub's %d", dir, st.Uid, os.Getuid())
	}
	return nil
}

// cleanProviderSockets removes the sockets a provider's earlier processes
// left behind. Call it only while no process of the provider runs.
func (h *Host) cleanProviderSockets(ctx context.Context, name string) {
	dir := filepath.Join(h.cfg.DataDir, "plugins", name)
	n, err := removeSockets(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	log := klog.FromContext(ctx)
	if err != nil {
		log.Error(err, "Removing stale provider sockets", "dir", dir)
	}
	if n > 0 {
		log.V(2).Info("Removed stale provider sockets", "dir", dir, "count", n)
	}
}

// cleanStaleSockets runs once at Host start, before any plugin does: it
// removes the sockets of every earlier run under <data-dir>/plugins,
// including those of providers that are no longer configured. Only the
// hub's own 0700 directories are touched, one level deep, and symlinked
// directories are skipped rather than followed.
func (h *Host) cleanStaleSockets(ctx context.Context) {
	root := filepath.Join(h.cfg.DataDir, "plugins")
	log := klog.FromContext(ctx)
	if err := checkOwnPrivateDir(root); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			log.Info("Not cleaning provider sockets: the plugin directory is not the hub's own", "dir", root, "reason", err.Error())
		}
		return
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		log.Error(err, "Listing provider socket dirs", "dir", root)
		return
	}
	for _, e := range entries {
		if e.Type().IsDir() {
			h.cleanProviderSockets(ctx, e.Name())
		}
	}
}
