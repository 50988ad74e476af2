package resourceproxy

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// The spec's fixed thresholds. They are not configurable; tests drive them
// with an injected clock.
const (
	DialTimeout         = 5 * time.Second
	QuarantineThreshold = 3
	QuarantineDuration  = 20 * time.Second
	StaleAfter          = 60 * time.Second
	RequestTimeout      = 60 * time.Second
	RetryAfterSeconds   = "1"
)

// PeerState is a peer's health as the metrics name it.
type PeerState string

const (
	PeerHealthy     PeerState = "healthy"
	PeerQuarantined PeerState = "quarantined"
	PeerHalfOpen    PeerState = "half_open"
)

// Reasons of the spec's vocabulary (metrics label and log field).
const (
	reasonUpstream        = "upstream"
	reasonNoPeer          = "no_peer"
	reasonStalePeers      = "stale_peers"
	reasonAllQuarantined  = "all_quarantined"
	reasonTimeout         = "timeout"
	reasonDeadline        = "deadline"
	reasonCanceled        = "canceled"
	reasonOwnershipMasked = "ownership_masked"
	reasonOwnershipFailed = "ownership_check_failed"
	reasonNamespaceMiss   = "namespace_missing"
	reasonUpgrade         = "upgrade_rejected"
	reasonUpstreamError   = "upstream_error"
	reasonError           = "error"
)

// Peers is the health state machine of one target's API server endpoints.
// A peer is healthy until QuarantineThreshold consecutive dial failures;
// then it is quarantined for QuarantineDuration, after which it is
// half-open: exactly one trial request may dial it (before any healthy
// peer is used). A trial that connects makes it healthy, one that fails
// quarantines it again. Healthy peers are used round-robin.
//
// The peer list is stale once the peer watch has been down for StaleAfter,
// counted from the drop; a publication resets it. Static peer lists (a
// workspace target) never go stale.
type Peers struct {
	clock clock.PassiveClock

	mu sync.Mutex
	// order is the published peer list; peers keeps state by host and
	// survives republication of the same host.
	order []string
	peers map[string]*peer
	next  int
	// downSince is when the peer watch dropped; zero while it is up.
	downSince time.Time
	// onQuarantine is called (under mu) each time a peer is quarantined.
	onQuarantine func()
}

type peer struct {
	failures   int
	until      time.Time // quarantine end; zero when healthy
	trialTaken bool
}

// NewPeers returns a peer set with the given hosts ("host:port").
func NewPeers(c clock.PassiveClock, hosts []string) *Peers {
	p := &Peers{clock: c, peers: map[string]*peer{}}
	p.Publish(hosts)
	return p
}

// Publish replaces the peer list (a watch event or list) and marks the
// watch up.
func (p *Peers) Publish(hosts []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.downSince = time.Time{}
	next := map[string]*peer{}
	p.order = p.order[:0:0]
	for _, h := range hosts {
		if _, dup := next[h]; dup || h == "" {
			continue
		}
		st := p.peers[h]
		if st == nil {
			st = &peer{}
		}
		next[h] = st
		p.order = append(p.order, h)
	}
	p.peers = next
}

// WatchDropped records that the peer watch broke. The staleness clock runs
// from the first drop until the next Publish.
func (p *Peers) WatchDropped() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.downSince.IsZero() {
		p.downSince = p.clock.Now()
	}
}

func (st *peer) state(now time.Time) PeerState {
	switch {
	case st.until.IsZero():
		return PeerHealthy
	case now.Before(st.until):
		return PeerQuarantined
	default:
		return PeerHalfOpen
	}
}

// Pick returns the next peer to use, whether it is a half-open trial, or
// the reason no peer may be used (no_peer, stale_peers, all_quarantined).
func (p *Peers) Pick() (host string, trial bool, reason string) { return p.pick(false) }

// pick with ignoreStale is for the peer watch itself: a stale list must
// not stop the watch that would refresh it.
func (p *Peers) pick(ignoreStale bool) (host string, trial bool, reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	if len(p.order) == 0 {
		return "", false, reasonNoPeer
	}
	if !ignoreStale && !p.downSince.IsZero() && now.Sub(p.downSince) >= StaleAfter {
		return "", false, reasonStalePeers
	}
	// A peer whose quarantine ended gets its one trial first, so it
	// rejoins even while other peers carry the load.
	for _, h := range p.order {
		if st := p.peers[h]; st.state(now) == PeerHalfOpen && !st.trialTaken {
			st.trialTaken = true
			return h, true, ""
		}
	}
	n := len(p.order)
	for i := range n {
		h := p.order[(p.next+i)%n]
		if p.peers[h].state(now) == PeerHealthy {
			p.next = (p.next + i + 1) % n
			return h, false, ""
		}
	}
	return "", false, reasonAllQuarantined
}

// Result records the outcome of a dial to host (or of a trial request
// that needed no dial): nil resets it to healthy, an error counts one
// consecutive failure and quarantines at the threshold or on a failed
// trial.
func (p *Peers) Result(host string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.peers[host]
	if st == nil {
		return // no longer published
	}
	if err == nil {
		*st = peer{}
		return
	}
	st.failures++
	now := p.clock.Now()
	switch st.state(now) {
	case PeerHalfOpen:
		p.quarantine(st, now)
	case PeerHealthy:
		if st.failures >= QuarantineThreshold {
			p.quarantine(st, now)
		}
	}
}

// ReleaseTrial gives a half-open peer's trial back when the trial request
// ended without telling anything about the peer (canceled by the caller).
func (p *Peers) ReleaseTrial(host string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if st := p.peers[host]; st != nil {
		st.trialTaken = false
	}
}

func (p *Peers) quarantine(st *peer, now time.Time) {
	st.until = now.Add(QuarantineDuration)
	st.trialTaken = false
	if p.onQuarantine != nil {
		p.onQuarantine()
	}
}

// Counts is the number of peers in each state, every state present.
func (p *Peers) Counts() map[PeerState]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	out := map[PeerState]int{PeerHealthy: 0, PeerQuarantined: 0, PeerHalfOpen: 0}
	for _, h := range p.order {
		out[p.peers[h].state(now)]++
	}
	return out
}

// States is every published host's state.
func (p *Peers) States() map[string]PeerState {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	out := make(map[string]PeerState, len(p.order))
	for _, h := range p.order {
		out[h] = p.peers[h].state(now)
	}
	return out
}

// State is one host's state, for tests and logs.
func (p *Peers) State(host string) (PeerState, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.peers[host]
	if !ok {
		return "", false
	}
	return st.state(p.clock.Now()), true
}

// Hosts is the published list.
func (p *Peers) Hosts() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.order...)
}
