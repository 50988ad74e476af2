package etcd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
)

// RestoreOptions tune Restore.
type RestoreOptions struct {
	// RevisionBump raises the restored store's revision by this much and
	// marks the old revisions compacted, so clients that watched the old
	// store never see resourceVersions go back: their watches get 410 Gone
	// and they relist (etcdutl's --bump-revision/--mark-compacted, which
	// Kubernetes recommends for a restore under running clients). 0 leaves
	// revisions as they were.
	RevisionBump uint64
}

// Restore makes dataDir a hub data dir whose embedded etcd holds the
// snapshot in file: the member StartEmbedded starts, with the snapshot's
// keys (the hub's workspaces, objects, shared secrets and keys). The
// snapshot's integrity hash is checked. dataDir must be new or empty
// (lost+found, which a freshly formatted volume has, aside): anything else
// is refused before a byte is written or a mode changed, so neither a live
// member nor another hub's certificates and tokens are ever overwritten or
// mixed with the restored store. A failed restore removes what it made.
func Restore(file, dataDir string, o RestoreOptions) error {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	if _, err := os.Stat(file); err != nil {
		return fmt.Errorf("restoring %s: %w", file, err)
	}
	existed, err := checkEmptyDataDir(abs)
	if err != nil {
		return err
	}
	dir := filepath.Join(abs, "etcd")
	// What a failed restore takes away again: all it created.
	made := abs
	if existed {
		made = dir
	}
	for _, d := range []string{abs, dir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return errors.Join(fmt.Errorf("creating %s: %w", d, err), os.RemoveAll(made))
		}
		// As StartEmbedded: the socket's safety rests on this mode.
		if err := os.Chmod(d, 0o700); err != nil {
			return errors.Join(fmt.Errorf("restricting %s: %w", d, err), os.RemoveAll(made))
		}
	}
	peer := unreachablePeerURL.String()
	err = snapshot.NewV3(zap.NewNop()).Restore(snapshot.RestoreConfig{
		SnapshotPath:        file,
		Name:                memberName,
		OutputDataDir:       filepath.Join(dir, memberDirName),
		PeerURLs:            []string{peer},
		InitialCluster:      memberName + "=" + peer,
		InitialClusterToken: initialClusterToken,
		RevisionBump:        o.RevisionBump,
		MarkCompacted:       o.RevisionBump > 0,
	})
	if err != nil {
		return errors.Join(fmt.Errorf("restoring %s: %w", file, err), os.RemoveAll(made))
	}
	return nil
}

// checkEmptyDataDir refuses a data dir with content; it tells whether the
// directory already exists.
func checkEmptyDataDir(abs string) (bool, error) {
	entries, err := os.ReadDir(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("checking %s: %w", abs, err)
	}
	var names []string
	for _, e := range entries {
		if e.Name() != "lost+found" {
			names = append(names, e.Name())
		}
	}
	switch {
	case len(names) == 0:
		return true, nil
	case slices.Contains(names, "etcd"):
		if _, err := os.Stat(filepath.Join(abs, "etcd", memberDirName)); err == nil {
			return true, fmt.Errorf("%s is not empty: it already holds an etcd member; restore into a new --data-dir", abs)
		}
	}
	if len(names) > 3 {
		names = append(names[:3], "...")
	}
	return true, fmt.Errorf("%s is not empty (%s): restore into a new --data-dir", abs, strings.Join(names, ", "))
}
