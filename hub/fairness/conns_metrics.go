package fairness

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// What the listener and the anonymous bound refused, for operators: a
// rising count is a flood being held off (third outside review, C-A and
// C-E), or a client behind one address that needs a higher bound.
var (
	connectionsEvicted = metrics.NewCounter(&metrics.CounterOpts{Name: "wharf_connections_evicted_total",
		Help: "Connections the hub closed past --max-connections to take a new one.", StabilityLevel: metrics.ALPHA})
	connectionsRefused = metrics.NewCounter(&metrics.CounterOpts{Name: "wharf_connections_refused_total",
		Help: "Connections closed at once past --max-connections-per-address.", StabilityLevel: metrics.ALPHA})
	handshakesRefused = metrics.NewCounter(&metrics.CounterOpts{Name: "wharf_tls_handshakes_refused_total",
		Help: "Connections closed before their TLS handshake past --max-tls-handshakes-per-second, or past 5s waiting for a turn from the hub's own address.", StabilityLevel: metrics.ALPHA})
	ownHandshakesWaited = metrics.NewCounter(&metrics.CounterOpts{Name: "wharf_tls_own_handshakes_waited_total",
		Help: "Times a TLS handshake from the hub's own address waited for a turn to compute: more of them at once than half the CPUs.", StabilityLevel: metrics.ALPHA})
	// Upgraded connections (upgrade.go): what they moved, charged to
	// their tenants' traffic budgets, and how long they waited for it.
	upgradedBytes = metrics.NewCounterVec(&metrics.CounterOpts{Name: "wharf_upgraded_connection_bytes_total",
		Help: "Bytes upgraded connections (websockets, exec, port-forward) moved, read from the client (in) or written to it (out), charged to their tenants' traffic budgets.", StabilityLevel: metrics.ALPHA}, []string{"direction"})
	upgradedWait = metrics.NewCounterVec(&metrics.CounterOpts{Name: "wharf_upgraded_connection_wait_seconds_total",
		Help: "Seconds upgraded connections waited for their tenants' traffic budgets, after a read from the client (in) or a write to it (out).", StabilityLevel: metrics.ALPHA}, []string{"direction"})
	anonymousRefused = metrics.NewCounter(&metrics.CounterOpts{Name: "wharf_anonymous_requests_refused_total",
		Help: "Requests without credentials refused with 429 past --max-anonymous-requests-per-second or -inflight.", StabilityLevel: metrics.ALPHA})
)

func init() {
	// legacyregistry is the registry the apiserver's /metrics serves.
	legacyregistry.MustRegister(connectionsEvicted, connectionsRefused, handshakesRefused, ownHandshakesWaited, anonymousRefused, upgradedBytes, upgradedWait)
}
