// Package hangup closes the connection of a refusal the hub answers at
// once. Every limit that refuses with 429 (the tenants' flow control, the
// anonymous bounds, the failed-authentication throttle, the event rate)
// decides it here, so that they all behave alike.
package hangup

import (
	"net/http"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// refusals counts the decisions, so that an operator (and a test) can
// tell how many 429s were held and how many closed their connection.
var refusals = metrics.NewCounterVec(&metrics.CounterOpts{Name: "wharf_refusals_total",
	Help: `429 answers of the hub's limits: held="true" were held until their Retry-After (or had waited as long), ` +
		`held="false" were answered at once and closed their connection.`,
	StabilityLevel: metrics.ALPHA}, []string{"held"})

func init() {
	// legacyregistry is the registry the apiserver's /metrics serves.
	legacyregistry.MustRegister(refusals)
}

// UnlessHeld closes the connection that the answer whose header is h goes
// on, unless its refusal was held (kept until its Retry-After before the
// 429 went; hub/fairness's tarpit). A refusal that is not held (past the
// hold's bounds, or from a limit that never holds) is answered the moment
// it is decided, and a client that sends again the moment a 429 comes got
// thousands of them a second on kept-alive connections: 4,000-12,500 for
// the tenants' refusals and the failed-authentication throttle (fourth
// outside review, attempts 1, 7 and 8: the hub's CPU went to answering
// them and it missed its lease renewals), 1,476 for the event rate
// (attempt 11). Closed, each further refusal costs the client a new
// connection, whose TLS handshake the listener meters per address
// (hub/fairness, conns.go). HTTP/2 reads the header as a GOAWAY.
func UnlessHeld(h http.Header, held bool) {
	if held {
		refusals.WithLabelValues("true").Inc()
		return
	}
	refusals.WithLabelValues("false").Inc()
	h.Set("Connection", "close")
}
