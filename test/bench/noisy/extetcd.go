package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// extEtcd is an etcd this command runs for one hub (-external-etcd), with
// the quota -etcd-quota: a hub that cannot set its embedded etcd's quota
// (main before issue 24) still meets a small store, as the attack that
// found B1 did.
type extEtcd struct {
	etcd     *embed.Etcd
	dir      string
	endpoint string
}

func startExtEtcd(ctx context.Context, quota int64) (*extEtcd, error) {
	dir, err := os.MkdirTemp("", "wharf-noisy-etcd-")
	if err != nil {
		return nil, fmt.Errorf("etcd dir: %w", err)
	}
	cfg := embed.NewConfig()
	cfg.Name = "noisy"
	cfg.Dir = filepath.Join(dir, "member")
	// A unix socket in a fresh 0700 dir, as the hub's embedded etcd uses:
	// no port to find, nothing reachable from elsewhere.
	cu := url.URL{Scheme: "unix", Path: filepath.Join(dir, "etcd.sock")}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = nil, []url.URL{{Scheme: "http", Host: "127.0.0.1:2380"}}
	cfg.ListenClientHttpUrls, cfg.ListenMetricsUrls = nil, nil
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	// As the hub's embedded etcd (hub/etcd.StartEmbedded), plus the quota.
	cfg.AutoCompactionMode, cfg.AutoCompactionRetention = "periodic", "1h"
	cfg.QuotaBackendBytes = quota
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("starting etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Close()
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("etcd not ready after 60s")
	case <-ctx.Done():
		e.Close()
		_ = os.RemoveAll(dir)
		return nil, ctx.Err()
	}
	return &extEtcd{etcd: e, dir: dir, endpoint: cu.String()}, nil
}

func (x *extEtcd) stop() {
	x.etcd.Close()
	_ = os.RemoveAll(x.dir)
}
