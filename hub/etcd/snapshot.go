package etcd

import (
	"context"
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
// etcd's own snapshot API (Maintenance.Snapshot, as etcdctl snapshot
// save). etcd streams a snapshot from one member, so with several
// endpoints it takes the first member found in quorum and caught up (see
// saveFromLiveMember): a member that is down, partitioned or refuses the
// client's TLS is passed over, and when none will do the error names each
// member's cause. cfg.DialTimeout bounds each member's check (10 s if 0);
// ctx bounds the whole save. The file appears complete or not at all, 0600
// and owned by the caller.
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
	version, err := saveFromLiveMember(ctx, cfg, part)
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("saving snapshot: %w", err)
	}
	st, err := snapshot.NewV3(zap.NewNop()).Status(part)
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("reading back snapshot %s: %w", file, err)
	}
	if err := os.Rename(part, file); err != nil {
		return SnapshotInfo{}, fmt.Errorf("saving snapshot: %w", err)
	}
	return SnapshotInfo{Version: version, Revision: st.Revision, Keys: st.TotalKey, Size: st.TotalSize}, nil
}
