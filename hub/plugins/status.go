package plugins

import (
	"context"
	"time"

	"github.com/wharfhub/wharf/sdk/plugin"
)

// State is where a provider is in its supervised lifecycle.
type State string

const (
	// StateStarting: first launch in progress.
	StateStarting State = "Starting"
	// StateRunning: started and serving on its socket.
	StateRunning State = "Running"
	// StateRestarting: it crashed, failed health checks or failed to start,
	// and the supervisor will launch it again after a backoff.
	StateRestarting State = "Restarting"
	// StateFailed: a configuration error (checksum, name mismatch, invalid
	// manifest, missing binary) that no restart can fix. Only a hub restart
	// with new flags or a new binary retries.
	StateFailed State = "Failed"
	// StateStopped: the hub is shutting down, or has, and stopped it.
	StateStopped State = "Stopped"
	// StateStandby: a replicas: single provider that this hub replica
	// does not hold; another replica runs it (see Holder).
	StateStandby State = "Standby"
)

// Status is a snapshot of one provider. The catalog turns it into
// CatalogEntry conditions.
type Status struct {
	// Name is the configured name, which a running plugin's manifest matches.
	Name string
	// Path is the binary.
	Path  string
	State State
	// LastError is the latest reason it went down or failed; it is kept
	// after a successful restart so the catalog can show why it restarted.
	LastError string
	// Restarts counts relaunches after a crash, failed health checks or a
	// failed start.
	Restarts int
	// LeaseLosses counts stops of a replicas: single provider because
	// this replica lost its Gate (a lease renewal missed its deadline, or
	// another replica took the Lease); not a handover. The later start
	// when the Lease is held again is not a restart.
	LeaseLosses int
	// Descriptor is the manifest from the latest successful Describe, nil
	// before the first. Shared: callers must not modify it.
	Descriptor *plugin.Descriptor
	// Pid is the running plugin's process id, 0 while not running.
	Pid int
	// Since is when State last changed.
	Since time.Time
	// NextStart is when the supervisor launches the plugin again, while it
	// waits out its restart backoff (StateRestarting); zero otherwise, and
	// in the past while that launch is under way.
	NextStart time.Time
	// Holder is the hub replica that holds a replicas: single provider,
	// as last observed ("" when unknown or not a single provider under a
	// Gate). Host.Holder answers for every provider.
	Holder string
}

// Subscribe returns a channel that receives a value whenever any provider's
// Status changes. Notifications are coalesced (capacity one, never
// blocking the supervisor), so a subscriber re-reads List on each receive
// instead of expecting one message per change. The channel is closed when
// ctx is done.
func (h *Host) Subscribe(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	context.AfterFunc(ctx, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.subs, ch)
		close(ch)
	})
	return ch
}

// notifyLocked wakes every subscriber. Callers hold h.mu, which also
// orders it against the close in Subscribe.
func (h *Host) notifyLocked() {
	for ch := range h.subs {
		select {
		case ch <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}

// update applies fn to p's status under the lock, stamps Since when the
// state changes, and notifies subscribers.
func (h *Host) update(p *provider, fn func(s *Status)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	before := p.status.State
	fn(&p.status)
	if p.status.State != before {
		p.status.Since = time.Now()
	}
	h.notifyLocked()
}

// Status returns the named provider's status.
func (h *Host) Status(name string) (Status, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, ok := h.byName[name]
	if !ok {
		return Status{}, false
	}
	return p.status, true
}

// List returns every provider's status, in start order.
func (h *Host) List() []Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Status, 0, len(h.order))
	for _, p := range h.order {
		out = append(out, p.status)
	}
	return out
}
