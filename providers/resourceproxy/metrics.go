package resourceproxy

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the spec's series on a registry of their own, so a test (or
// a second handler in one process) reads exactly its own values. Every
// series carries target; none carries a peer.
type Metrics struct {
	Registry *prometheus.Registry

	requests       *prometheus.CounterVec
	duration       *prometheus.HistogramVec
	inflight       *prometheus.GaugeVec
	watches        *prometheus.GaugeVec
	fallbacks      *prometheus.CounterVec
	quarantines    *prometheus.CounterVec
	dialFailures   *prometheus.CounterVec
	dialDuration   *prometheus.HistogramVec
	peersCollector *peersCollector
}

// PeerGroup is one (target, group/version) whose peers the peers gauge
// reports at every scrape.
type PeerGroup struct {
	Target       string
	GroupVersion string
	Peers        *Peers
}

// peersCollector emits wharf_resource_proxy_peers for every state at every
// scrape, computed then (a quarantine ends by the clock, not by an event).
type peersCollector struct {
	desc   *prometheus.Desc
	source func() []PeerGroup
}

func (c *peersCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *peersCollector) Collect(ch chan<- prometheus.Metric) {
	if c.source == nil {
		return
	}
	// Several client workspaces may reach one target through connections
	// of their own; the gauge counts the target's peers once, each in the
	// worst state any connection sees it in.
	type key struct{ target, gv string }
	hosts := map[key]map[string]PeerState{}
	for _, g := range c.source() {
		k := key{g.Target, g.GroupVersion}
		if hosts[k] == nil {
			hosts[k] = map[string]PeerState{}
		}
		for h, st := range g.Peers.States() {
			if cur, ok := hosts[k][h]; !ok || worse(st, cur) {
				hosts[k][h] = st
			}
		}
	}
	for k, m := range hosts {
		counts := map[PeerState]int{PeerHealthy: 0, PeerQuarantined: 0, PeerHalfOpen: 0}
		for _, st := range m {
			counts[st]++
		}
		for state, n := range counts {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), k.target, k.gv, string(state))
		}
	}
}

func worse(a, b PeerState) bool {
	rank := map[PeerState]int{PeerHealthy: 0, PeerHalfOpen: 1, PeerQuarantined: 2}
	return rank[a] > rank[b]
}

// NewMetrics registers the series on a new registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wharf_resource_proxy_requests_total", Help: "Proxied requests by outcome.",
		}, []string{"target", "group_version", "verb", "code", "reason"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "wharf_resource_proxy_request_duration_seconds", Help: "Duration of non-watch proxied requests.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"target", "verb"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "wharf_resource_proxy_inflight_requests", Help: "Non-watch proxied requests in flight.",
		}, []string{"target"}),
		watches: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "wharf_resource_proxy_active_watches", Help: "Watches streaming through the proxy.",
		}, []string{"target"}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wharf_resource_proxy_discovery_fallbacks_total", Help: "Discovery answers served locally because the target could not.",
		}, []string{"target", "group_version", "reason"}),
		quarantines: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wharf_resource_proxy_peer_quarantines_total", Help: "Times a peer left rotation.",
		}, []string{"target"}),
		dialFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wharf_resource_proxy_peer_dial_failures_total", Help: "Failed dials to target peers.",
		}, []string{"target", "reason"}),
		dialDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "wharf_resource_proxy_peer_dial_duration_seconds", Help: "Duration of dials to target peers.",
			Buckets: []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5},
		}, []string{"target"}),
		peersCollector: &peersCollector{desc: prometheus.NewDesc("wharf_resource_proxy_peers",
			"Target peers by state, per routed group/version.", []string{"target", "group_version", "state"}, nil)},
	}
	m.Registry.MustRegister(m.requests, m.duration, m.inflight, m.watches, m.fallbacks,
		m.quarantines, m.dialFailures, m.dialDuration, m.peersCollector)
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}

// WatchPeers makes the peers gauge report every cached target connection
// once per routed group/version that uses it.
func (m *Metrics) WatchPeers(routes *Routes, targets *Targets) {
	m.peersCollector.source = func() []PeerGroup {
		var out []PeerGroup
		targets.Each(func(cluster string, key string, c *targetConn) {
			for _, r := range routes.Cluster(cluster) {
				if r.Target.Key() == key {
					out = append(out, PeerGroup{Target: c.name, GroupVersion: r.GroupVersion(), Peers: c.peers})
				}
			}
		})
		return out
	}
}
