package server

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// etcdReadyGrace is how long etcd may fail the readiness probe before
// /readyz fails: longer than a leader election on loopback, so that the
// load balancer does not take every replica out at once for a blip that
// the store's write retries (hub/etcd retry.go) ride out anyway.
const etcdReadyGrace = 3 * time.Second

// etcdReadyWait bounds how long /readyz waits for the probe: upstream's
// waits for its own timeout (2 s) while etcd elects a leader, longer than
// a load balancer's health check allows.
const etcdReadyWait = 500 * time.Millisecond

// tolerantCheck wraps upstream's etcd readiness check so that it fails
// only once etcd has been failing (or not answering) for the grace period.
type tolerantCheck struct {
	inner healthz.HealthChecker
	clock clock.Clock
	grace time.Duration
	wait  time.Duration

	mu sync.Mutex
	// failingSince is when the current run of failures began (zero when
	// the last answer was success).
	failingSince time.Time
	lastErr      error
}

func (c *tolerantCheck) Name() string { return c.inner.Name() }

// GroupName keeps /readyz?exclude=etcd-readiness working.
func (c *tolerantCheck) GroupName() string {
	if g, ok := c.inner.(healthz.GroupedHealthChecker); ok {
		return g.GroupName()
	}
	return c.inner.Name()
}

func (c *tolerantCheck) Check(req *http.Request) error {
	done := make(chan error, 1)
	// The inner check is bounded by its own timeout and rate-limited, so
	// the goroutine ends soon even when no one waits for it.
	go func() { done <- c.inner.Check(req) }()
	var err error
	select {
	case err = <-done:
	case <-c.clock.After(c.wait):
		err = fmt.Errorf("etcd did not answer within %s", c.wait)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	if err == nil {
		c.failingSince, c.lastErr = time.Time{}, nil
		return nil
	}
	if c.failingSince.IsZero() {
		c.failingSince = now
		klog.V(2).InfoS("etcd readiness probe failing; tolerated for the grace period", "grace", c.grace, "err", err)
	}
	c.lastErr = err
	if now.Sub(c.failingSince) < c.grace {
		return nil
	}
	return fmt.Errorf("etcd failing for %s: %w", now.Sub(c.failingSince).Round(time.Millisecond), err)
}

// tolerateEtcdBlips replaces upstream's etcd readiness checks in checks
// (the main one and the per-resource overrides, all in one group).
func tolerateEtcdBlips(checks []healthz.HealthChecker, clk clock.Clock) {
	for i, hc := range checks {
		if g, ok := hc.(healthz.GroupedHealthChecker); ok && g.GroupName() == "etcd-readiness" {
			checks[i] = &tolerantCheck{inner: hc, clock: clk, grace: etcdReadyGrace, wait: etcdReadyWait}
		}
	}
}
