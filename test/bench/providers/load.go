package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wharfhub/wharf/test/bench/benchkit"
)

// target is one way to reach the upstream handler.
type target struct {
	name string
	url  string
	// token, when set, is sent as a bearer token.
	token string
	// tls trusts the target's certificate; nil for plain HTTP.
	tls *tls.Config
	// socket, when set, is dialed instead of the URL's host.
	socket string
}

// result is what one load run measured.
type result struct {
	name     string
	requests int
	errors   int
	elapsed  time.Duration
	lat      benchkit.Summary
}

func (r result) rps() float64 { return benchkit.Rate(r.requests, r.elapsed) }

// client is the load generator's HTTP/1.1 client: conns keep-alive
// connections, no more, so every target sees the same connection count.
func (t target) client(conns int) *http.Client {
	tr := &http.Transport{
		TLSClientConfig:     t.tls,
		MaxConnsPerHost:     conns,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	if t.socket != "" {
		d := &net.Dialer{}
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", t.socket)
		}
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// load runs conns workers, each sending one request at a time on its own
// keep-alive connection, for warmup (not measured) and then for d.
func load(ctx context.Context, t target, conns int, warmup, d time.Duration) (result, error) {
	c := t.client(conns)
	defer c.CloseIdleConnections()
	// One checked request first: a target that answers wrongly is an
	// error, not a fast benchmark.
	if err := fetch(ctx, c, t); err != nil {
		return result{}, fmt.Errorf("%s: %w", t.name, err)
	}
	var measuring atomic.Bool
	var requests, errs atomic.Int64
	var firstErr error
	var errOnce sync.Once
	recs := make([]benchkit.Recorder, conns)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				err := fetch(ctx, c, t)
				if !measuring.Load() {
					continue
				}
				if err != nil {
					errs.Add(1)
					errOnce.Do(func() { firstErr = err })
					continue
				}
				recs[i].Add(time.Since(start))
				requests.Add(1)
			}
		}()
	}
	if !sleep(ctx, warmup) {
		close(stop)
		wg.Wait()
		return result{}, ctx.Err()
	}
	measuring.Store(true)
	began := time.Now()
	ok := sleep(ctx, d)
	measuring.Store(false)
	elapsed := time.Since(began)
	close(stop)
	wg.Wait()
	if !ok {
		return result{}, ctx.Err()
	}
	var all benchkit.Recorder
	for i := range recs {
		all.AddAll(&recs[i])
	}
	r := result{name: t.name, requests: int(requests.Load()), errors: int(errs.Load()), elapsed: elapsed, lat: all.Summarize()}
	if r.errors > 0 {
		return r, fmt.Errorf("%s: %d failed requests, first: %w", t.name, r.errors, firstErr)
	}
	return r, nil
}

// fetch sends one GET and reads the whole answer, which must be a 200.
func fetch(ctx context.Context, c *http.Client, t target) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.url, nil)
	if err != nil {
		return err
	}
	if t.token != "" {
		req.Header.Set("Authorization", "Bearer "+t.token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || n != int64(bodyLen) {
		return fmt.Errorf("%s answered %d with %d bytes", t.url, resp.StatusCode, n)
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
