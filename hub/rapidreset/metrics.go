package rapidreset

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// What the budget saw, for operators (hub administrators read /metrics): a
// rising closure count is a rapid reset being cut off, or a client that
// cancels far more than kubectl or a browser does.
var (
	streamsReset = metrics.NewCounter(&metrics.CounterOpts{Name: "wharf_http2_streams_reset_early_total",
		Help: "HTTP/2 streams the client cancelled before the hub began their answer.", StabilityLevel: metrics.ALPHA})
	connsClosed = metrics.NewCounter(&metrics.CounterOpts{Name: "wharf_connections_closed_for_resets_total",
		Help: "Client connections the hub closed past --max-stream-resets-per-connection.", StabilityLevel: metrics.ALPHA})
)

func init() {
	// legacyregistry is the registry the apiserver's /metrics serves.
	legacyregistry.MustRegister(streamsReset, connsClosed)
}
