package idleconns

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// What the tracker closed, for operators (hub administrators read
// /metrics): a rising count is a flood of idle connections being cut, or
// a client that dials long before it sends anything.
var (
	closedWithoutRequest = metrics.NewCounterVec(&metrics.CounterOpts{Name: "wharf_connections_closed_without_request_total",
		Help:           "Client connections the hub closed before they began a request: past --first-request-timeout (reason timeout) or past --max-connections-without-request (reason bound).",
		StabilityLevel: metrics.ALPHA}, []string{"reason"})
	withoutRequest = metrics.NewGauge(&metrics.GaugeOpts{Name: "wharf_connections_without_request",
		Help: "Client connections open now that have not begun a request.", StabilityLevel: metrics.ALPHA})
)

func init() {
	// legacyregistry is the registry the apiserver's /metrics serves.
	legacyregistry.MustRegister(closedWithoutRequest, withoutRequest)
}
