package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"k8s.io/client-go/rest"

	"github.com/wharfhub/wharf/test/bench/benchkit"
)

// getter GETs one URL as one identity over a keep-alive connection.
type getter struct {
	name string
	url  string
	hc   *http.Client
}

func newGetter(name string, cfg *rest.Config, url string) (*getter, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("http client for %s: %w", name, err)
	}
	return &getter{name: name, url: url, hc: hc}, nil
}

// get does one GET, drains the body and returns the status code.
func (g *getter) get(ctx context.Context) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.url, nil)
	if err != nil {
		return 0, fmt.Errorf("request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := g.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("get as %s: %w", g.name, err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, fmt.Errorf("read body as %s: %w", g.name, err)
	}
	return resp.StatusCode, nil
}

// timedGet does one GET that must succeed and returns its latency.
func (g *getter) timedGet(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	code, err := g.get(ctx)
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if code != http.StatusOK {
		return 0, fmt.Errorf("get %s as %s: HTTP %d", g.url, g.name, code)
	}
	return d, nil
}

// waitAllowed polls until g's GET answers 200, i.e. until the hub's RBAC
// index has seen the binding.
func (g *getter) waitAllowed(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		code, err := g.get(ctx)
		if err == nil && code == http.StatusOK {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s never allowed to get %s: %w (last: HTTP %d, %v)", g.name, g.url, ctx.Err(), code, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

const warmup = 100

// measureGets does n sequential timed GETs with each getter, interleaved
// (a, b, b, a, a, b, ...) so that noise on a shared machine hits both
// alike, after warmup untimed GETs each. It returns one summary per getter.
func measureGets(ctx context.Context, n int, gs ...*getter) ([]benchkit.Summary, error) {
	recs := make([]benchkit.Recorder, len(gs))
	for i := -warmup; i < n; i++ {
		for k := range gs {
			j := k
			if i%2 != 0 {
				j = len(gs) - 1 - k
			}
			d, err := gs[j].timedGet(ctx)
			if err != nil {
				return nil, err
			}
			if i >= 0 {
				recs[j].Add(d)
			}
		}
	}
	out := make([]benchkit.Summary, len(gs))
	for j := range recs {
		out[j] = recs[j].Summarize()
	}
	return out, nil
}
