package aggregation

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/wharfhub/wharf/hub/apiview"
	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/controller"
	"github.com/wharfhub/wharf/hub/proxy"
)

// Config is what an Aggregator needs.
type Config struct {
	Index *Index
	// Proxy forwards to providers (hub/proxy's backend).
	Proxy Proxy
	// Providers reports loaded providers, for the Available condition.
	Providers proxy.Providers
	// Enabled reports whether a provider is enabled in a workspace.
	Enabled    func(id cluster.ID, provider string) bool
	Workspaces Workspaces
	// Status writes apiservices/status (the hub's own storage, no
	// admission).
	Status rest.Updater
	// Clock drives the checks; nil is the real clock.
	Clock clock.WithTicker
	// Interval between availability and discovery checks of every
	// APIService; zero means 10s.
	Interval time.Duration
	// TenantOf charges an APIService's checks to the tenant of its
	// workspace, so the checks take turns between tenants; nil: one
	// tenant.
	TenantOf controller.TenantOfCluster
}

// Aggregator routes, caches discovery and keeps Available.
type Aggregator struct {
	index      *Index
	proxy      Proxy
	providers  proxy.Providers
	enabled    func(id cluster.ID, provider string) bool
	workspaces Workspaces
	status     rest.Updater
	clock      clock.WithTicker
	interval   time.Duration
	tenantOf   controller.TenantOfCluster

	mu sync.RWMutex
	// discovery is the last good APIResourceList of each (cluster, gv),
	// keyed by gvKey.
	discovery map[string]*metav1.APIResourceList
}

// New returns an Aggregator.
func New(c Config) *Aggregator {
	a := &Aggregator{
		index: c.Index, proxy: c.Proxy, providers: c.Providers, enabled: c.Enabled, workspaces: c.Workspaces,
		status: c.Status, clock: c.Clock, interval: c.Interval, tenantOf: c.TenantOf,
		discovery: map[string]*metav1.APIResourceList{},
	}
	if a.clock == nil {
		a.clock = clock.RealClock{}
	}
	if a.interval <= 0 {
		a.interval = 10 * time.Second
	}
	return a
}

// Discovery implements apiview.Aggregated: the routed group versions of a
// workspace with what their providers last answered to discovery.
func (a *Aggregator) Discovery(ctx context.Context, id cluster.ID) []apiview.AggregatedGroupVersion {
	services := a.index.InCluster(id)
	if len(services) == 0 {
		return nil
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	out := make([]apiview.AggregatedGroupVersion, 0, len(services))
	for _, s := range services {
		out = append(out, apiview.AggregatedGroupVersion{
			Group: s.Spec.Group, Version: s.Spec.Version,
			GroupPriorityMinimum: s.Spec.GroupPriorityMinimum, VersionPriority: s.Spec.VersionPriority,
			Resources: a.discovery[gvKey(id, s.Spec.Group, s.Spec.Version)],
		})
	}
	return out
}

func (a *Aggregator) setDiscovery(key string, l *metav1.APIResourceList) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if l == nil {
		delete(a.discovery, key)
		return
	}
	a.discovery[key] = l
}
