// Package etcd runs the embedded etcd member that backs a single hub when no
// external etcd cluster is configured.
package etcd

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"k8s.io/klog/v2"
)

// Embedded is a running single-member etcd.
type Embedded struct {
	etcd *embed.Etcd
	// ClientURL is the loopback URL that the hub's storage connects to.
	ClientURL string
}

// StartEmbedded starts etcd with its data under dir, listening on loopback
// only. The member survives restarts: the same dir brings back the same data.
func StartEmbedded(ctx context.Context, dir string) (*Embedded, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating etcd dir: %w", err)
	}
	clientPort, err := freePort()
	if err != nil {
		return nil, err
	}
	peerPort, err := freePort()
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = "wharf"
	cfg.Dir = filepath.Join(dir, "member-data")
	// Ports are picked at each start: the member is alone, so its peer URL
	// only needs to be valid for this process, and persisted membership
	// data is not tied to the client URL.
	cu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	pu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	// Auto-compaction keeps the keyspace from growing without bound; the
	// apiserver also compacts, this is a safety net.
	cfg.AutoCompactionMode = "periodic"
	cfg.AutoCompactionRetention = "1h"

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("starting embedded etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("embedded etcd not ready after 60s")
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	}
	klog.InfoS("Embedded etcd ready", "dir", dir, "clientURL", cu.String())
	return &Embedded{etcd: e, ClientURL: cu.String()}, nil
}

// Close stops etcd. Call it only after the apiserver has shut down.
func (e *Embedded) Close() { e.etcd.Close() }

// Err reports fatal errors of the running member.
func (e *Embedded) Err() <-chan error { return e.etcd.Err() }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
