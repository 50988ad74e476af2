package etcd

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/fileutil"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// socketName is the client socket inside the member's directory.
const socketName = "etcd.sock"

// maxSocketPath is the longest path a unix socket address may have on
// Linux (sun_path is 108 bytes, including the terminating NUL).
const maxSocketPath = 107

// embeddedCatchUpEntries bounds the raft log the member keeps in memory;
// etcd compacts it every 100 applied entries down to this many.
const embeddedCatchUpEntries = 100

// unreachablePeerURL is advertised as the member's peer URL. A
// single-member cluster never dials its peers, but etcd records a peer URL
// in its membership data and requires one of the host:port form; nothing
// listens on it (see StartEmbedded).
var unreachablePeerURL = url.URL{Scheme: "http", Host: "127.0.0.1:2380"}

// Embedded is a running single-member etcd.
type Embedded struct {
	etcd *embed.Etcd
	// lock is held for the member's life (lockDir).
	lock *fileutil.LockedFile
	// ClientURL is the unix:// URL of the client socket that the hub's
	// storage connects to. Several processes of the same user may share it
	// (the e2e tests point several hubs at one member).
	ClientURL string
	// SocketPath is the file system path of the client socket.
	SocketPath string
	// QuotaBytes is the backend quota the member was started with (0:
	// etcd's default).
	QuotaBytes int64
}

// StartEmbedded starts etcd with its data under dir. The member survives
// restarts: the same dir brings back the same data.
//
// It opens no TCP port at all. Clients reach it through a unix socket in
// dir, which is 0700, so only the hub's user can connect: etcd has no
// authentication of its own here, and whoever connects reads and writes
// every workspace, every Secret and the hub's signing keys. There is no
// peer listener either, because a single member has no peers to hear from.
func StartEmbedded(ctx context.Context, dir string) (*Embedded, error) {
	return StartEmbeddedWithQuota(ctx, dir, 0)
}

// StartEmbeddedWithQuota is StartEmbedded with etcd's backend quota set to
// quotaBytes (0: etcd's own default, 2 GiB). Past the quota etcd arms its
// NOSPACE alarm and refuses every write until the alarm is disarmed; the
// hub keeps below it and disarms it (hub/storecap).
func StartEmbeddedWithQuota(ctx context.Context, dir string, quotaBytes int64) (*Embedded, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("etcd dir: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating etcd dir: %w", err)
	}
	// MkdirAll leaves an existing directory's mode alone; the socket's
	// safety rests on this one.
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("restricting etcd dir: %w", err)
	}
	sock := filepath.Join(dir, socketName)
	if len(sock) > maxSocketPath {
		return nil, fmt.Errorf("etcd socket path %q is longer than %d bytes: use a shorter --data-dir", sock, maxSocketPath)
	}
	// Before etcd opens its socket: a previous hub on this dir may still
	// be shutting down (lockDir).
	lock, err := lockDir(ctx, clock.RealClock{}, dir, dirLockWait)
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = memberName
	cfg.Dir = filepath.Join(dir, memberDirName)
	cu := url.URL{Scheme: "unix", Path: sock}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	// No peer listener (a nil list opens none); the advertised URL only
	// names the member in its own membership record.
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = nil, []url.URL{unreachablePeerURL}
	cfg.ListenClientHttpUrls, cfg.ListenMetricsUrls = nil, nil
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	// Auto-compaction keeps the keyspace from growing without bound; the
	// apiserver also compacts, this is a safety net.
	cfg.AutoCompactionMode = "periodic"
	cfg.AutoCompactionRetention = "1h"
	cfg.QuotaBackendBytes = quotaBytes
	// Watches that asked for progress notifications (the watch caches')
	// hear of the current revision every second even on a quiet
	// resource: the hub's store monitor compacts only up to what every
	// cache has read (hub/storage CacheProgress).
	cfg.WatchProgressNotifyInterval = time.Second
	// etcd keeps this many applied raft entries in memory for slow
	// followers (default 5,000: with 1 MB values, GBs of heap held after
	// they were deleted, issue 24). A single member has no followers.
	cfg.SnapshotCatchUpEntries = embeddedCatchUpEntries

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("starting embedded etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Close()
		_ = lock.Close()
		return nil, fmt.Errorf("embedded etcd not ready after 60s")
	case <-ctx.Done():
		e.Close()
		_ = lock.Close()
		return nil, ctx.Err()
	}
	klog.InfoS("Embedded etcd ready", "dir", dir, "clientURL", cu.String())
	return &Embedded{etcd: e, lock: lock, ClientURL: cu.String(), SocketPath: sock, QuotaBytes: quotaBytes}, nil
}

// Close stops etcd, then lets the next member on its dir start. Call it
// only after the apiserver has shut down.
func (e *Embedded) Close() {
	e.etcd.Close()
	_ = e.lock.Close()
}

// Err reports fatal errors of the running member.
func (e *Embedded) Err() <-chan error { return e.etcd.Err() }
