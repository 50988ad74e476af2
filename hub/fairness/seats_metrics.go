package fairness

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// requestSeats tells an operator (and a test) how wide the tenants'
// requests were estimated: what a list, a write or a named object cost in
// the fair queues.
var requestSeats = metrics.NewHistogramVec(&metrics.HistogramOpts{Name: "wharf_fairness_request_seats",
	Help:           "Seats each tenant API request was estimated to take in the fair queues (its width), by kind (read-only, mutating).",
	Buckets:        []float64{1, 2, 4, 8, 16, 32, 64, 128},
	StabilityLevel: metrics.ALPHA}, []string{"kind"})

func init() {
	legacyregistry.MustRegister(requestSeats)
}

func (k Kind) label() string {
	if k == ReadOnly {
		return "read-only"
	}
	return "mutating"
}
