package authn

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// What the failure budgets saw, for operators (hub administrators read
// /metrics): a rising count is a guessing flood held off, or a client
// behind one address with a stale credential.
var (
	throttled = metrics.NewCounter(&metrics.CounterOpts{Name: "wharf_authn_throttled_total",
		Help: "Requests refused with 429, their credential not evaluated, past --authn-failure-rate-limit (per address or prefix) or the hub-wide budget.", StabilityLevel: metrics.ALPHA})
	providerRefusals = metrics.NewCounter(&metrics.CounterOpts{Name: "wharf_authn_provider_refusals_total",
		Help: "Credentials a provider refused (401 or 403) on its public paths, charged to the caller's address as failed authentications.", StabilityLevel: metrics.ALPHA})
)

func init() {
	// legacyregistry is the registry the apiserver's /metrics serves.
	legacyregistry.MustRegister(throttled, providerRefusals)
}
