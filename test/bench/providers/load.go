package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
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
	// pids are the serving processes (proxy and handler), whose CPU time
	// is measured.
	pids func() []int
}

// result is what the load runs against one target measured.
type result struct {
	name     string
	requests int
	elapsed  time.Duration
	lat      benchkit.Recorder
	// server and client are CPU time of the serving processes and of the
	// load generator during the measurements.
	server, client time.Duration
}

func (r *result) rps() float64 { return benchkit.Rate(r.requests, r.elapsed) }

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
// keep-alive connection, for warmup (not measured) and then for d, and
// adds what it measured to r.
func load(ctx context.Context, t target, conns int, warmup, d time.Duration, r *result) error {
	c := t.client(conns)
	defer c.CloseIdleConnections()
	// One checked request first: a target that answers wrongly is an
	// error, not a fast benchmark.
	if err := fetch(ctx, c, t); err != nil {
		return fmt.Errorf("%s: %w", t.name, err)
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
		return ctx.Err()
	}
	pids := t.pids()
	server0, client0 := cpuTime(pids), cpuTime([]int{os.Getpid()})
	measuring.Store(true)
	began := time.Now()
	ok := sleep(ctx, d)
	measuring.Store(false)
	elapsed := time.Since(began)
	r.server += cpuTime(pids) - server0
	r.client += cpuTime([]int{os.Getpid()}) - client0
	close(stop)
	wg.Wait()
	if !ok {
		return ctx.Err()
	}
	if n := errs.Load(); n > 0 {
		return fmt.Errorf("%s: %d failed requests, first: %w", t.name, n, firstErr)
	}
	r.requests += int(requests.Load())
	r.elapsed += elapsed
	for i := range recs {
		r.lat.AddAll(&recs[i])
	}
	return nil
}

// fetch sends one GET and reads the whole answer, which must be a 200.
func fetch(ctx context.Context, c *http.Client, t target) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.url, nil)
	if err != nil {
		return err
	}
	if t.token != "" {
		req.Header.Set("Authorization", "Bearer "+t.token)
		// The admin has no home workspace: name one for the backend proxy.
		req.Header.Set("X-Wharf-Workspace", "root")
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
