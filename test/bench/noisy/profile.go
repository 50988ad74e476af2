package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"

	"github.com/wharfhub/wharf/test/bench/benchkit"
)

// startProfile fetches a CPU profile of h's hub for one throughput round
// (as its admin: /debug/pprof is for hub admins only) and returns a
// function that waits for it. Without -cpuprofile-dir it does nothing.
// The profile tells where the cost of limits goes; the throughput figure
// of a profiled round includes the profiler's small overhead, on both
// binaries alike.
func startProfile(ctx context.Context, p params, h *benchkit.Hub, name string) (wait func()) {
	if p.profileDir == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := fetchProfile(ctx, h, int(p.throughputFor.Seconds()), filepath.Join(p.profileDir, name+".pprof")); err != nil {
			benchkit.Progress("%s: cpu profile: %v", name, err)
		}
	}()
	return func() { <-done }
}

func fetchProfile(ctx context.Context, h *benchkit.Hub, seconds int, path string) error {
	if seconds < 1 {
		seconds = 1
	}
	c, err := rest.HTTPClientFor(h.Config(""))
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", h.URL(), seconds), nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("fetch: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("fetch: %s: %s", resp.Status, b)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}
