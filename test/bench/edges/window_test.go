package edgesbench

import (
	"context"
	"errors"
	"time"
)

// window measures the hub and the provider over d while the bench does
// nothing: their CPU, the etcd writes (by class, and the most written
// keys) and the provider's own count of status writes.
func (e *env) window(ctx context.Context, provider int, d time.Duration) (Window, error) {
	w := Window{D: d}
	wc, err := WatchWrites(ctx, "unix://"+e.hub.DataDir()+"/etcd/etcd.sock", e.cluster)
	if err != nil {
		return w, err
	}
	defer wc.Stop()
	m0, merr := e.metrics(ctx)
	hub0, err0 := CPUTime(e.hub.Pid())
	prov0, err1 := CPUTime(provider)
	select {
	case <-time.After(d):
	case <-ctx.Done():
		return w, ctx.Err()
	}
	hub1, err2 := CPUTime(e.hub.Pid())
	prov1, err3 := CPUTime(provider)
	if err := errors.Join(err0, err1, err2, err3); err != nil {
		return w, err
	}
	w.HubCPU, w.ProviderCPU = hub1-hub0, prov1-prov0
	if m1, err := e.metrics(ctx); merr == nil && err == nil {
		const sw = "wharf_edges_status_writes_total"
		w.StatusWrites = int(m1.Sum(sw) - m0.Sum(sw))
		w.ConnectedGauge = int(m1.Sum("wharf_edges_connected"))
	} else {
		w.MetricsErr = errors.Join(merr, err)
	}
	w.Writes, w.WatchErr = wc.Snapshot()
	w.TopKeys = wc.TopKeys(3)
	return w, nil
}

// quietMax bounds waitQuiet.
const quietMax = 90 * time.Second

// waitQuiet waits until no Edge object has been written for quiet, or max
// passes, and returns how long it waited.
func (e *env) waitQuiet(ctx context.Context, quiet, max time.Duration) (time.Duration, error) {
	wc, err := WatchWrites(ctx, "unix://"+e.hub.DataDir()+"/etcd/etcd.sock", e.cluster)
	if err != nil {
		return 0, err
	}
	defer wc.Stop()
	start := time.Now()
	last, lastChange := -1, start
	for time.Since(start) < max {
		c, err := wc.Snapshot()
		if err != nil {
			return 0, err
		}
		if n := c[ClassEdges]; n != last {
			last, lastChange = n, time.Now()
		} else if time.Since(lastChange) >= quiet {
			break
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return time.Since(start), nil
}
