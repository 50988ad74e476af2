package edges

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/wharfhub/wharf/revdial"
	"github.com/wharfhub/wharf/sdk"
)

// newHubAuthorizer is the production Authorizer: reviews at the hub.
func newHubAuthorizer(hc sdk.HubConfig) (Authorizer, error) {
	return NewHubAuthorizer(AuthorizerConfig{HubURL: hc.HubURL, RestConfig: hc.RestConfig})
}

// newEgress builds the egress handler on the provider's cache, tunnel
// registry and authorizer. Byte counts come from revdial's own stats
// (statsCollector), so the egress adds no counting of its own.
func (p *Provider) newEgress(sdk.HubConfig) http.Handler {
	e, err := NewEgress(EgressConfig{Authorizer: p.authz, Edge: p.Edge, Tunnel: p.liveTunnel})
	if err != nil {
		// Only a nil field fails NewEgress; all are set above.
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeStatus(w, r, fmt.Errorf("edges egress: %w", err))
		})
	}
	return e
}

// liveTunnel is the registry's current tunnel of an edge.
func (p *Provider) liveTunnel(cluster, name string) (Tunnel, bool) {
	t, ok := p.tunnels.get(tunnelID(cluster, name))
	if !ok {
		p.metrics.dials.WithLabelValues("not_connected").Inc()
		return nil, false
	}
	return registryTunnel{p: p, d: t.d}, true
}

// registryTunnel dials one specific tunnel (not whatever is current when
// the dial happens), so the egress's per-tunnel transport never mixes two
// agents' connections, and it counts dials as DialEdge does. It is a
// comparable value: the same tunnel gives the same key.
type registryTunnel struct {
	p *Provider
	d *revdial.Dialer
}

func (t registryTunnel) Done() <-chan struct{} { return t.d.Done() }

func (t registryTunnel) Dial(ctx context.Context) (net.Conn, error) {
	start := t.p.clock.Now()
	c, err := t.d.Dial(ctx)
	t.p.metrics.dialDuration.Observe(t.p.clock.Since(start).Seconds())
	if err != nil {
		t.p.metrics.dials.WithLabelValues("error").Inc()
		if errors.Is(err, revdial.ErrTunnelClosed) {
			return nil, fmt.Errorf("%w: %w", ErrNotConnected, err)
		}
		return nil, err
	}
	t.p.metrics.dials.WithLabelValues("success").Inc()
	return c, nil
}
