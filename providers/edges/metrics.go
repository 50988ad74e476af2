package edges

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wharfhub/wharf/revdial"
)

// metrics are the provider's own registry, served at GET /metrics.
type metrics struct {
	reg          *prometheus.Registry
	connected    prometheus.Gauge
	dials        *prometheus.CounterVec
	dialDuration prometheus.Histogram
	statusWrites prometheus.Counter
}

func newMetrics(stats func() revdial.Stats) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		connected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "wharf_edges_connected", Help: "Edges whose agent tunnel is up.",
		}),
		dials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wharf_edges_tunnel_dials_total", Help: "Connections opened through edge tunnels, by result (success, error, not_connected).",
		}, []string{"result"}),
		dialDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "wharf_edges_tunnel_dial_duration_seconds", Help: "Time to open one connection through an edge tunnel (conn-ready to pickup).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}),
		statusWrites: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wharf_edges_status_writes_total", Help: "Edge status updates written; liveness should cost few.",
		}),
	}
	m.reg.MustRegister(m.connected, m.dials, m.dialDuration, m.statusWrites, &statsCollector{stats: stats})
	for _, r := range []string{"success", "error", "not_connected"} {
		m.dials.WithLabelValues(r)
	}
	return m
}

// statsCollector exports revdial's counters at scrape time, so the data
// path pays nothing for them.
type statsCollector struct {
	stats func() revdial.Stats
}

var (
	pickupFailuresDesc = prometheus.NewDesc("wharf_edges_pickup_failures_total",
		"Dials failed by the agent's pickup-failed report.", nil, nil)
	pickupRefusedDesc = prometheus.NewDesc("wharf_edges_pickup_refused_total",
		"Pickups refused: unknown, used or withdrawn token.", nil, nil)
	tunnelBytesDesc = prometheus.NewDesc("wharf_edges_tunnel_bytes_total",
		"Payload bytes through edge tunnels; direction from_edge or to_edge.", []string{"direction"}, nil)
)

func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pickupFailuresDesc
	ch <- pickupRefusedDesc
	ch <- tunnelBytesDesc
}

func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(pickupFailuresDesc, prometheus.CounterValue, float64(s.PickupFailures))
	ch <- prometheus.MustNewConstMetric(pickupRefusedDesc, prometheus.CounterValue, float64(s.PickupRefused))
	ch <- prometheus.MustNewConstMetric(tunnelBytesDesc, prometheus.CounterValue, float64(s.BytesRead), "from_edge")
	ch <- prometheus.MustNewConstMetric(tunnelBytesDesc, prometheus.CounterValue, float64(s.BytesWritten), "to_edge")
}
