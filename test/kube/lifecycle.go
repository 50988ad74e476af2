package kube

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// StopReplica gracefully stops replica i, waits for it to exit, and then
// removes it from the kubernetes Endpoints and EndpointSlice (written
// through a replica still running). Stopping the last replica leaves the
// endpoints as they were, since no server is left to write them.
func (c *Cluster) StopReplica(i int) error {
	return c.downReplica(i, func(p *process) error { return p.stop(60 * time.Second) })
}

// KillReplica ends replica i with SIGKILL, as a crash would, then updates
// the endpoints like StopReplica.
func (c *Cluster) KillReplica(i int) error {
	return c.downReplica(i, (*process).kill)
}

func (c *Cluster) downReplica(i int, how func(*process) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.replica(i)
	if err != nil {
		return err
	}
	if r.proc == nil {
		return fmt.Errorf("replica %d is not running", i)
	}
	if err := how(r.proc); err != nil {
		return fmt.Errorf("stop replica %d: %w", i, err)
	}
	r.proc = nil
	if len(c.running()) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.StartTimeout)
	defer cancel()
	return c.syncEndpointsLocked(ctx)
}

// StartReplica starts a stopped replica i on its old address and port, waits
// for /readyz, and adds it back to the endpoints.
func (c *Cluster) StartReplica(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, err := c.replica(i)
	if err != nil {
		return err
	}
	if r.proc != nil {
		return fmt.Errorf("replica %d is already running", i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.StartTimeout)
	defer cancel()
	if err := c.startReplica(ctx, r); err != nil {
		return err
	}
	return c.syncEndpointsLocked(ctx)
}

// KillEtcd ends etcd with SIGKILL. The apiservers keep running and fail
// their etcd readiness checks; StartEtcd brings the same data back.
func (c *Cluster) KillEtcd() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.etcd.proc == nil {
		return fmt.Errorf("etcd is not running")
	}
	if err := c.etcd.proc.kill(); err != nil {
		return err
	}
	c.etcd.proc = nil
	return nil
}

// StartEtcd restarts etcd after KillEtcd, on the same ports and data dir,
// and waits until it is healthy.
func (c *Cluster) StartEtcd() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.etcd.proc != nil {
		return fmt.Errorf("etcd is already running")
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.StartTimeout)
	defer cancel()
	return c.etcd.start(ctx)
}

// WaitReady waits until replica i answers /readyz, e.g. after StartEtcd.
func (c *Cluster) WaitReady(ctx context.Context, i int) error {
	c.mu.Lock()
	r, err := c.replica(i)
	var p *process
	if err == nil {
		p = r.proc
	}
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if p == nil {
		return fmt.Errorf("replica %d is not running", i)
	}
	return waitFor(ctx, p, func(ctx context.Context) error { return c.checkReady(ctx, r) })
}

// Ready reports the error of one /readyz call on replica i (nil if ready).
func (c *Cluster) Ready(ctx context.Context, i int) error {
	c.mu.Lock()
	r, err := c.replica(i)
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return c.checkReady(ctx, r)
}

// Replicas is the number of replicas, running or stopped.
func (c *Cluster) Replicas() int { return len(c.replicas) }

// RunningReplicas lists the indexes of running replicas in order.
func (c *Cluster) RunningReplicas() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.running()
}

// ReplicaHost is "ip:port" of replica i, fixed for the cluster's life.
func (c *Cluster) ReplicaHost(i int) string {
	if i < 0 || i >= len(c.replicas) {
		return ""
	}
	return c.replicas[i].host()
}

// EtcdURL is the client URL of the shared etcd, for tests that also want
// to read or write etcd directly (e.g. a hub started with --etcd-servers).
func (c *Cluster) EtcdURL() string { return c.etcd.clientURL }

// LogDir holds etcd.log and kube-apiserver-<i>.log; it is kept on failure.
func (c *Cluster) LogDir() string { return c.logDir }

// Binaries are the executables this cluster runs.
func (c *Cluster) Binaries() Binaries { return c.bins }

func (c *Cluster) replica(i int) (*replica, error) {
	if i < 0 || i >= len(c.replicas) {
		return nil, fmt.Errorf("replica %d out of range [0,%d)", i, len(c.replicas))
	}
	return c.replicas[i], nil
}

// running must be called with c.mu held.
func (c *Cluster) running() []int {
	var idx []int
	for _, r := range c.replicas {
		if r.proc != nil {
			idx = append(idx, r.index)
		}
	}
	return idx
}

// dumpLogs prints the last lines of every log so a CI failure is
// diagnosable without the files.
func (c *Cluster) dumpLogs(t testing.TB) {
	const tail = 40
	paths, _ := filepath.Glob(filepath.Join(c.logDir, "*.log"))
	sort.Strings(paths)
	for _, p := range paths {
		lines, err := lastLines(p, tail)
		if err != nil {
			t.Logf("kube fixture: %v", err)
			continue
		}
		t.Logf("kube fixture: last %d lines of %s:\n%s", len(lines), p, joinLines(lines))
	}
}

func lastLines(path string, n int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	defer f.Close()
	var ring []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		ring = append(ring, sc.Text())
		if len(ring) > n {
			ring = ring[1:]
		}
	}
	if err := sc.Err(); err != nil {
		return ring, fmt.Errorf("read %s: %w", path, err)
	}
	return ring, nil
}

func joinLines(lines []string) string {
	out := ""
	for _, l := range lines {
		out += "  " + l + "\n"
	}
	return out
}
