package proxy

import (
	"strconv"
	"time"

	compbasemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Backend proxy metrics. The provider label is only ever a loaded
// provider's name, so a caller probing random names cannot grow the series.
//
// The duration is time to response headers: from the proxy receiving the
// request until the provider's status and headers arrived (or the proxy
// wrote its own error). Streams (SSE, websockets after the 101) are thus
// measured by how fast they started, not by how long a client kept them
// open, which would swamp the histogram with connection lifetimes. The
// request counter is written when the exchange ends, with the final code.
var (
	providerRequests = compbasemetrics.NewCounterVec(&compbasemetrics.CounterOpts{
		Name:           "wharf_provider_requests_total",
		Help:           "Requests through the backend proxy by provider and HTTP status code.",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"provider", "code"})
	providerDuration = compbasemetrics.NewHistogramVec(&compbasemetrics.HistogramOpts{
		Name:           "wharf_provider_request_duration_seconds",
		Help:           "Time from receiving a backend proxy request to the response headers; streams count until their headers.",
		Buckets:        []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"provider"})
)

func init() {
	// legacyregistry is the registry the apiserver's /metrics serves.
	legacyregistry.MustRegister(providerRequests, providerDuration)
}

// observe records one finished exchange. headers is when the response
// headers were known; zero means the proxy answered itself just now.
func observe(provider string, code int, start, headers time.Time) {
	if headers.IsZero() {
		headers = time.Now()
	}
	providerRequests.WithLabelValues(provider, strconv.Itoa(code)).Inc()
	providerDuration.WithLabelValues(provider).Observe(headers.Sub(start).Seconds())
}
