package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"
)

// etcdServer is the single-member etcd all replicas share. Its ports and data
// directory are fixed at first start so a restart after KillEtcd comes back
// with the same data at the same address.
type etcdServer struct {
	bin       string
	dataDir   string
	logPath   string
	clientURL string
	peerURL   string
	proc      *process
}

func newEtcd(bin, dir, logDir string, ports *portPicker) (*etcdServer, error) {
	lo := []net.IP{replicaIP(0)}
	clientPort, err := ports.pick(lo)
	if err != nil {
		return nil, fmt.Errorf("etcd client port: %w", err)
	}
	peerPort, err := ports.pick(lo)
	if err != nil {
		return nil, fmt.Errorf("etcd peer port: %w", err)
	}
	return &etcdServer{
		bin:       bin,
		dataDir:   filepath.Join(dir, "etcd-data"),
		logPath:   filepath.Join(logDir, "etcd.log"),
		clientURL: "http://127.0.0.1:" + strconv.Itoa(clientPort),
		peerURL:   "http://127.0.0.1:" + strconv.Itoa(peerPort),
	}, nil
}

func (e *etcdServer) args() []string {
	return []string{
		"--name=default",
		"--data-dir=" + e.dataDir,
		"--listen-client-urls=" + e.clientURL,
		"--advertise-client-urls=" + e.clientURL,
		"--listen-peer-urls=" + e.peerURL,
		"--initial-advertise-peer-urls=" + e.peerURL,
		"--initial-cluster=default=" + e.peerURL,
		"--log-level=warn",
		// Tests never need durability across a machine crash; fsync on a
		// shared disk is what makes etcd slow here.
		"--unsafe-no-fsync",
	}
}

// start launches etcd and waits until it reports healthy.
func (e *etcdServer) start(ctx context.Context) error {
	p, err := startProcess("etcd", e.bin, e.args(), e.logPath)
	if err != nil {
		return err
	}
	e.proc = p
	if err := waitFor(ctx, p, e.healthy); err != nil {
		_ = p.kill()
		return fmt.Errorf("etcd at %s not healthy (log %s): %w", e.clientURL, e.logPath, err)
	}
	return nil
}

func (e *etcdServer) healthy(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.clientURL+"/health", nil)
	if err != nil {
		return fmt.Errorf("health request: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("etcd /health: %w", err)
	}
	defer resp.Body.Close()
	var body struct {
		Health string `json:"health"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return fmt.Errorf("decode etcd /health: %w", err)
	}
	if body.Health != "true" {
		return fmt.Errorf("etcd /health says %q", body.Health)
	}
	return nil
}

// waitFor polls check every 100ms until it succeeds, the process exits, or
// ctx ends. The last check error is reported so a timeout says why.
func waitFor(ctx context.Context, p *process, check func(context.Context) error) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := check(cctx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() == nil || last == nil {
			last = err // keep the cause, not the deadline it ran into
		}
		if ok, err := p.exited(); ok {
			return fmt.Errorf("%s exited (%v) before ready; last check: %w", p.name, err, last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w; last check: %w", ctx.Err(), last)
		case <-tick.C:
		}
	}
}
