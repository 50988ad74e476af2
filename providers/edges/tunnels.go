package edges

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/revdial"
)

// ErrNotConnected is wrapped by DialEdge when the edge has no tunnel.
var ErrNotConnected = errors.New("edge is not connected")

// tunnelID is the revdial id of an edge. It keys on the logical cluster:
// same-named edges of two workspaces are two tunnels, never one.
func tunnelID(cluster, name string) string { return cluster + "/" + name }

// agentInfo is what the agent said about itself when it connected.
type agentInfo struct {
	edgeType   v1alpha1.EdgeType
	version    string
	hostname   string
	sshHostKey string
}

// tunnel is one adopted control channel.
type tunnel struct {
	d     *revdial.Dialer
	info  agentInfo
	since time.Time
	// credHash is the hash of the credential the tunnel was opened with;
	// once the Edge no longer accepts it (a new join, a manual edit), the
	// tunnel is closed (see revokeStale).
	credHash string
}

// registry holds the live tunnel of each edge, in memory: liveness costs no
// etcd write until something changes (see status.go).
type registry struct {
	mu sync.Mutex
	m  map[string]*tunnel
	// seen are the edges that had a tunnel in this process: their
	// Disconnected is real, while an edge this process never saw is given
	// the startup grace.
	seen map[string]bool
}

func newRegistry() *registry {
	return &registry{m: map[string]*tunnel{}, seen: map[string]bool{}}
}

func (r *registry) get(id string) (*tunnel, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.m[id]
	return t, ok
}

func (r *registry) wasSeen(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[id]
}

func (r *registry) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m)
}

// adopt makes d the tunnel of (cluster, name), replacing any older one, and
// watches it until it dies or ctx ends.
//
// Two connects of one edge may race: revdial registers the later dialer
// (closing the earlier) before either handler gets here. Only the dialer
// revdial holds now is adopted, so a replaced one never overwrites its
// successor here; if none is held any more, a dead entry left behind for
// a successor that died before adopting itself is cleared.
func (p *Provider) adopt(ctx context.Context, cluster, name string, d *revdial.Dialer, info agentInfo, credHash string) {
	id := tunnelID(cluster, name)
	p.tunnels.mu.Lock()
	if cur, live := p.rd.Dialer(id); !live || cur != d {
		stale := false
		if t, ok := p.tunnels.m[id]; ok && !live && t.d.Err() != nil {
			delete(p.tunnels.m, id)
			stale = true
		}
		p.tunnels.mu.Unlock()
		if stale {
			p.metrics.connected.Set(float64(p.tunnels.count()))
			p.enqueue(cluster, name)
		}
		return
	}
	p.tunnels.m[id] = &tunnel{d: d, info: info, since: p.clock.Now(), credHash: credHash}
	p.tunnels.seen[id] = true
	p.tunnels.mu.Unlock()
	p.metrics.connected.Set(float64(p.tunnels.count()))
	p.enqueue(cluster, name)
	go func() {
		select {
		case <-d.Done():
		case <-ctx.Done():
			return
		}
		p.tunnelDone(cluster, name, d)
	}()
}

// tunnelDone forgets d when it dies, unless a newer tunnel of the same edge
// has replaced it: kedge's reconnect race let the old tunnel's clean-up
// remove the new one and mark a connected edge Disconnected. revdial
// registers the new dialer before it closes the old, so when d is Done a
// newer one is either in our map already or in revdial's, about to be
// adopted; in both cases nothing changes here.
func (p *Provider) tunnelDone(cluster, name string, d *revdial.Dialer) {
	id := tunnelID(cluster, name)
	p.tunnels.mu.Lock()
	cur := p.tunnels.m[id]
	if cur == nil || cur.d != d {
		p.tunnels.mu.Unlock()
		return
	}
	if nd, ok := p.rd.Dialer(id); ok && nd != d {
		p.tunnels.mu.Unlock()
		return
	}
	delete(p.tunnels.m, id)
	p.tunnels.mu.Unlock()
	p.metrics.connected.Set(float64(p.tunnels.count()))
	p.enqueue(cluster, name)
}

// closeEdge ends an edge's tunnel (the Edge is being deleted).
func (p *Provider) closeEdge(cluster, name string) {
	if t, ok := p.tunnels.get(tunnelID(cluster, name)); ok {
		_ = t.d.Close()
	}
}

// forgetEdge drops what the provider remembers of a deleted edge.
func (p *Provider) forgetEdge(cluster, name string) {
	p.closeEdge(cluster, name)
	p.tunnels.mu.Lock()
	delete(p.tunnels.seen, tunnelID(cluster, name))
	p.tunnels.mu.Unlock()
}

// credentialAccepted says whether the Edge still accepts the credential
// whose hash is h (as current or previous).
func credentialAccepted(e *v1alpha1.Edge, h string) bool {
	cur := subtle.ConstantTimeCompare([]byte(e.Annotations[AnnCredentialHash]), []byte(h)) == 1
	prev := subtle.ConstantTimeCompare([]byte(e.Annotations[AnnPreviousCredentialHash]), []byte(h)) == 1
	return h != "" && (cur || prev)
}

// revokeStale closes t when the Edge no longer accepts the credential it
// was opened with: a new join replaced the agent, or an admin removed the
// credential. The cache may lag behind a join that just happened, so a
// live read decides before anything is closed.
func (p *Provider) revokeStale(ctx context.Context, cluster string, e *v1alpha1.Edge, t *tunnel) bool {
	if credentialAccepted(e, t.credHash) {
		return false
	}
	live, err := p.store.get(ctx, cluster, e.Name)
	if err != nil || credentialAccepted(live, t.credHash) {
		return false
	}
	klog.FromContext(ctx).Info("closing a tunnel whose credential was revoked", "cluster", cluster, "edge", e.Name)
	_ = t.d.Close()
	return true
}

// DialEdge opens a connection through the edge's tunnel: HTTP to the edge
// cluster's API server (kubernetes edges) or a raw stream to sshd (server
// edges). The caller must have authorized the request already. It returns
// an error wrapping ErrNotConnected when the edge has no tunnel.
func (p *Provider) DialEdge(ctx context.Context, cluster, name string) (net.Conn, error) {
	t, ok := p.tunnels.get(tunnelID(cluster, name))
	if !ok {
		p.metrics.dials.WithLabelValues("not_connected").Inc()
		return nil, fmt.Errorf("edge %q: %w", name, ErrNotConnected)
	}
	start := p.clock.Now()
	c, err := t.d.Dial(ctx)
	p.metrics.dialDuration.Observe(p.clock.Since(start).Seconds())
	if err != nil {
		p.metrics.dials.WithLabelValues("error").Inc()
		if errors.Is(err, revdial.ErrTunnelClosed) {
			return nil, fmt.Errorf("edge %q: %w: %w", name, ErrNotConnected, err)
		}
		return nil, fmt.Errorf("edge %q: %w", name, err)
	}
	p.metrics.dials.WithLabelValues("success").Inc()
	return c, nil
}

// Edge returns an Edge from the provider's cache.
func (p *Provider) Edge(cluster, name string) (*v1alpha1.Edge, bool) {
	return p.store.cached(cluster, name)
}
