package plugins

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/sdk/plugin"
)

// maxSocketPath mirrors the SDK's sun_path limit so the failure is a clear
// configuration error (shorten --data-dir) rather than a launch error.
const maxSocketPath = 103

// permanentError is a failure no restart can fix.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

func permanent(format string, args ...any) error {
	return &permanentError{fmt.Errorf(format, args...)}
}

// errExited is why a plugin went down when its process is gone.
var errExited = errors.New("plugin process exited")

// supervise owns one provider for the Host's lifetime: launch, watch,
// restart with backoff, and stop at ctx done. It never panics the hub on a
// plugin's behalf and returns only once the plugin's process group is dead.
// With a Gate, a replicas: single provider runs only while the Gate says
// this replica holds it (see gate.go).
func (h *Host) supervise(ctx context.Context, p *provider) {
	// Every path below has killed and reaped the plugin before it returns.
	defer h.cleanProviderSockets(ctx, p.name)
	// Run counted every provider for Handover; this one stops counting
	// once it is known not to hold a Lease (any longer).
	released := sync.OnceFunc(h.gatedRunning.Done)
	defer released()
	if h.cfg.Gate == nil {
		released()
		h.superviseLoop(ctx, ctx, p, nil)
		return
	}
	l, ok := h.firstLaunch(ctx, p)
	if !ok {
		return
	}
	if l.d.Replicas != plugin.ReplicasSingle {
		released()
		h.superviseLoop(ctx, ctx, p, l)
		return
	}
	h.gated(ctx, p, l, released)
}

// launched is a plugin process that answered Describe but was not started.
type launched struct {
	c *plugin.Client
	d *plugin.Descriptor
}

// superviseLoop runs the plugin until ctx is done, restarting it with
// backoff. first, when set, is an already launched process to start.
// hubCtx is the Host's own context: when ctx ends before it, a Gate took
// the provider away, and the plugin must be gone quickly (lostStopTimeout)
// because another replica is about to start it.
func (h *Host) superviseLoop(hubCtx, ctx context.Context, p *provider, first *launched) {
	log := klog.FromContext(ctx)
	sv := h.cfg.Supervision
	attempt := 0
	for {
		c, d, err := h.startOnce(ctx, p, first)
		first = nil
		if err == nil {
			started := time.Now()
			h.running(p, c, d)
			log.Info("Provider running", "pid", c.Pid(), "version", d.Version)
			err = h.watch(ctx, c)
			h.down(p)
			if ctx.Err() != nil {
				stop := h.cfg.Supervision.StopTimeout
				if hubCtx.Err() == nil {
					stop = min(stop, lostStopTimeout)
				}
				h.shutdown(ctx, c, stop)
				h.cleanProviderSockets(ctx, p.name)
				h.update(p, func(s *Status) { s.State, s.Pid = StateStopped, 0 })
				return
			}
			c.Kill()
			h.cleanProviderSockets(ctx, p.name)
			if time.Since(started) >= sv.StableAfter {
				attempt = 0
			}
		}
		if ctx.Err() != nil {
			h.update(p, func(s *Status) { s.State, s.Pid = StateStopped, 0 })
			return
		}
		if !h.retry(ctx, p, err, &attempt) {
			return
		}
	}
}

// retry records a failed start or a crash and waits the backoff. It
// reports false when the provider must not be started again: a permanent
// error (StateFailed) or ctx done (StateStopped).
func (h *Host) retry(ctx context.Context, p *provider, err error, attempt *int) bool {
	log := klog.FromContext(ctx)
	sv := h.cfg.Supervision
	if pe := (*permanentError)(nil); errors.As(err, &pe) {
		log.Error(err, "Provider failed; not restarting")
		h.update(p, func(s *Status) { s.State, s.LastError, s.Pid, s.NextStart = StateFailed, err.Error(), 0, time.Time{} })
		return false
	}
	delay := backoff(*attempt, sv.BackoffInitial, sv.BackoffMax)
	*attempt++
	log.Error(err, "Provider down; restarting", "after", delay)
	h.update(p, func(s *Status) {
		s.State, s.LastError, s.Pid = StateRestarting, err.Error(), 0
		s.NextStart = time.Now().Add(delay)
		s.Restarts++
	})
	if !sleep(ctx, delay) {
		h.update(p, func(s *Status) { s.State = StateStopped })
		return false
	}
	return true
}

// startOnce launches the plugin (unless l is an already launched one),
// checks its manifest and starts it. On any error the process is already
// killed.
func (h *Host) startOnce(ctx context.Context, p *provider, l *launched) (*plugin.Client, *plugin.Descriptor, error) {
	sctx, cancel := context.WithTimeout(ctx, h.cfg.Supervision.StartTimeout)
	defer cancel()
	if l == nil {
		var err error
		if l, err = h.launch(sctx, p); err != nil {
			return nil, nil, err
		}
	}
	c, d := l.c, l.d
	dataDir, err := privateDir(filepath.Join(h.cfg.DataDir, "providers"), p.name)
	if err != nil {
		c.Kill()
		return nil, nil, permanent("data dir: %w", err)
	}
	cfg := plugin.Config{HubURL: h.cfg.HubURL, DataDir: dataDir, ProviderConfig: p.config}
	if h.cfg.RestConfig != nil {
		if cfg.RestConfig, err = h.cfg.RestConfig(sctx, d); err != nil {
			c.Kill()
			return nil, nil, fmt.Errorf("credentials: %w", err)
		}
	}
	if err := c.Start(sctx, cfg); err != nil {
		c.Kill()
		return nil, nil, err
	}
	return c, d, nil
}

// launch starts the plugin process and reads its manifest, bounded by
// sctx. On any error the process is already killed.
func (h *Host) launch(sctx context.Context, p *provider) (*launched, error) {
	if err := checkExecutable(p.spec.Path); err != nil {
		return nil, permanent("binary: %w", err)
	}
	sockDir, err := privateDir(filepath.Join(h.cfg.DataDir, "plugins"), p.name)
	if err != nil {
		return nil, permanent("socket dir: %w", err)
	}
	// No process of p runs here: whatever sockets are left are dead.
	h.cleanProviderSockets(sctx, p.name)
	if sock := filepath.Join(sockDir, "http.sock"); len(sock) > maxSocketPath {
		return nil, permanent("socket path %q is longer than %d bytes; use a shorter --data-dir", sock, maxSocketPath)
	}
	c, err := plugin.Launch(sctx, plugin.Options{
		Path:         p.spec.Path,
		Checksum:     p.spec.Checksum,
		SocketDir:    sockDir,
		IsolateEnv:   true,
		Env:          h.env,
		StartTimeout: h.cfg.Supervision.StartTimeout,
		Stderr:       newLogWriter(klog.FromContext(sctx)),
	})
	if errors.Is(err, goplugin.ErrChecksumsDoNotMatch) {
		return nil, permanent("binary %s does not match its pinned sha256 checksum: %w", p.spec.Path, err)
	}
	if err != nil {
		return nil, err
	}
	d, err := c.Describe(sctx)
	if err != nil {
		c.Kill()
		// An RPC failure (the plugin died) may pass; an answer that did not
		// validate will be the same answer next time.
		if _, isRPC := status.FromError(err); !isRPC {
			return nil, permanent("%w", err)
		}
		return nil, err
	}
	if d.Name != p.name {
		c.Kill()
		return nil, permanent("manifest name %q does not match configured provider name %q", d.Name, p.name)
	}
	return &launched{c: c, d: d}, nil
}

// watch returns why the plugin should be restarted, or ctx's error.
func (h *Host) watch(ctx context.Context, c *plugin.Client) error {
	sv := h.cfg.Supervision
	exitT := time.NewTicker(sv.ExitPoll)
	defer exitT.Stop()
	healthT := time.NewTicker(sv.HealthInterval)
	defer healthT.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-exitT.C:
			if c.Exited() {
				return errExited
			}
		case <-healthT.C:
			hctx, cancel := context.WithTimeout(ctx, sv.HealthTimeout)
			err := c.Health(hctx)
			cancel()
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case err == nil:
				failures = 0
			case c.Exited():
				return errExited
			default:
				failures++
				klog.FromContext(ctx).Info("Provider health check failed", "failures", failures, "err", err)
				if failures >= sv.HealthFailures {
					return fmt.Errorf("%d consecutive health checks failed: %w", failures, err)
				}
			}
		}
	}
}

// shutdown stops the plugin politely on a context that outlives the hub's,
// then kills its process group whatever Stop said.
func (h *Host) shutdown(ctx context.Context, c *plugin.Client, timeout time.Duration) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if err := c.Close(sctx); err != nil {
		klog.FromContext(ctx).V(2).Info("Provider stop failed; killed", "err", err)
	}
}

func (h *Host) running(p *provider, c *plugin.Client, d *plugin.Descriptor) {
	h.update(p, func(s *Status) {
		s.State, s.Descriptor, s.Pid, s.NextStart = StateRunning, d, c.Pid(), time.Time{}
		p.transport = c.Transport()
	})
}

// down withdraws the transport first, so proxies answer 503 instead of
// dialing a dying socket.
func (h *Host) down(p *provider) {
	h.update(p, func(*Status) {
		if p.transport != nil {
			p.transport.CloseIdleConnections()
			p.transport = nil
		}
	})
}

// backoff is full jitter: uniform in [0, min(max, initial·2^attempt)].
func backoff(attempt int, initial, maxDelay time.Duration) time.Duration {
	ceiling := maxDelay
	if attempt < 32 {
		if d := initial << attempt; d > 0 && d < maxDelay {
			ceiling = d
		}
	}
	return time.Duration(rand.Int64N(int64(ceiling) + 1))
}

// sleep waits d or until ctx is done, reporting whether it slept fully.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// privateDir creates parent/name with every level 0700. Chmod, not just
// MkdirAll's mode, because the umask or an earlier run may have left it
// wider, and the socket inside carries trusted identity headers.
func privateDir(parent, name string) (string, error) {
	dir := filepath.Join(parent, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	for _, d := range []string{parent, dir} {
		if err := os.Chmod(d, 0o700); err != nil {
			return "", err
		}
	}
	return dir, nil
}
