package proxy

import (
	"strconv"
	"time"

	compbasemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Backend proxy metrics. The provider label is only ever a loaded
// provider's name, so a caller probing random names cannot grow the series.
// An upgraded connection (101) is observed when it closes, so its duration
// is the connection's lifetime.
var (
	providerRequests = compbasemetrics.NewCounterVec(&compbasemetrics.CounterOpts{
		Name:           "wharf_provider_requests_total",
		Help:           "Requests through the backend proxy by provider and HTTP status code.",
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"provider", "code"})
	providerDuration = compbasemetrics.NewHistogramVec(&compbasemetrics.HistogramOpts{
		Name:           "wharf_provider_request_duration_seconds",
		Help:           "Duration of requests through the backend proxy, streams included.",
		Buckets:        []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600},
		StabilityLevel: compbasemetrics.ALPHA,
	}, []string{"provider"})
)

func init() {
	// legacyregistry is the registry the apiserver's /metrics serves.
	legacyregistry.MustRegister(providerRequests, providerDuration)
}

func observe(provider string, code int, start time.Time) {
	providerRequests.WithLabelValues(provider, strconv.Itoa(code)).Inc()
	providerDuration.WithLabelValues(provider).Observe(time.Since(start).Seconds())
}
