package etcd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
)

// memberDirName is the embedded member's etcd data dir inside its
// directory (<data-dir>/etcd); StartEmbedded and Restore agree on it.
const memberDirName = "member-data"

// memberName is the embedded member's name; a restored member must carry
// the same, with the same (unreachable) peer URL, to be the one
// StartEmbedded starts.
const memberName = "wharf"

// initialClusterToken is embed.NewConfig's default, which StartEmbedded
// keeps.
const initialClusterToken = "etcd-cluster"

// EmbeddedClientURL is the client URL of the embedded etcd of a hub
// started with --data-dir dataDir, found through its socket. Only the
// hub's user can connect (the directory is 0700), and only while that hub
// runs.
func EmbeddedClientURL(dataDir string) (string, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return "", fmt.Errorf("data dir: %w", err)
	}
	sock := filepath.Join(abs, "etcd", socketName)
	fi, err := os.Stat(sock)
	if err != nil {
		return "", fmt.Errorf("no embedded etcd socket under %s (is a hub running with --data-dir %s?): %w", abs, dataDir, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return "", fmt.Errorf("%s is not a socket", sock)
	}
	return "unix://" + sock, nil
}

// SnapshotInfo describes a saved snapshot.
type SnapshotInfo struct {
	// Version is the etcd server version that wrote it.
	Version string
	// Revision is the store revision it holds; Keys how many keys.
	Revision int64
	Keys     int
	Size     int64
}

// SaveSnapshot streams a snapshot of the etcd cfg reaches into file, with
// etcd's own snapshot API (Maintenance.Snapshot, as etcdctl snapshot save).
// The file appears complete or not at all, 0600 and owned by the caller.
//
// etcd's Save writes <path>.part with O_CREATE|O_TRUNC, so in a directory
// others may write to (a shared /backup) a .part file someone planted
// first would keep its owner and mode (a world-readable copy of every
// Secret and signing key), and a planted symlink would make the saver
// overwrite whatever it points at. Save therefore writes into a fresh
// private directory next to file (0700, a name nobody could plant), and
// the result is renamed over file, which replaces a symlink there rather
// than writing through it.
func SaveSnapshot(ctx context.Context, cfg clientv3.Config, file string) (SnapshotInfo, error) {
	tmp, err := os.MkdirTemp(filepath.Dir(file), "."+filepath.Base(file)+".saving-")
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("saving snapshot: %w", err)
	}
	defer os.RemoveAll(tmp)
	part := filepath.Join(tmp, "snapshot.db")
	m := snapshot.NewV3(zap.NewNop())
	version, err := m.Save(ctx, cfg, part)
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("saving snapshot: %w", err)
	}
	st, err := m.Status(part)
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("reading back snapshot %s: %w", file, err)
	}
	if err := os.Rename(part, file); err != nil {
		return SnapshotInfo{}, fmt.Errorf("saving snapshot: %w", err)
	}
	return SnapshotInfo{Version: version, Revision: st.Revision, Keys: st.TotalKey, Size: st.TotalSize}, nil
}

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
// snapshot's integrity hash is checked. A data dir that already has an
// embedded member is refused, never overwritten.
func Restore(file, dataDir string, o RestoreOptions) error {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	dir := filepath.Join(abs, "etcd")
	member := filepath.Join(dir, memberDirName)
	if _, err := os.Stat(member); err == nil {
		return fmt.Errorf("%s already holds an etcd member: restore into a new --data-dir", abs)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("checking %s: %w", member, err)
	}
	for _, d := range []string{abs, dir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("creating %s: %w", d, err)
		}
		// As StartEmbedded: the socket's safety rests on this mode.
		if err := os.Chmod(d, 0o700); err != nil {
			return fmt.Errorf("restricting %s: %w", d, err)
		}
	}
	peer := unreachablePeerURL.String()
	err = snapshot.NewV3(zap.NewNop()).Restore(snapshot.RestoreConfig{
		SnapshotPath:        file,
		Name:                memberName,
		OutputDataDir:       member,
		PeerURLs:            []string{peer},
		InitialCluster:      memberName + "=" + peer,
		InitialClusterToken: initialClusterToken,
		RevisionBump:        o.RevisionBump,
		MarkCompacted:       o.RevisionBump > 0,
	})
	if err != nil {
		return fmt.Errorf("restoring %s: %w", file, err)
	}
	return nil
}
