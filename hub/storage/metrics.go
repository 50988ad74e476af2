package storage

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// skippedObjects counts stored values that were read but not served
// (guard.go), so an operator sees them without reading logs.
var skippedObjects = metrics.NewCounterVec(&metrics.CounterOpts{
	Name:           "wharf_storage_skipped_objects_total",
	Help:           "Stored objects skipped on read because they cannot be served from their etcd key, by resource and reason.",
	StabilityLevel: metrics.ALPHA,
}, []string{"resource", "reason"})

func init() {
	// legacyregistry is the registry the apiserver's /metrics serves.
	legacyregistry.MustRegister(skippedObjects, historyRefusals)
}

var historyRefusals = metrics.NewCounter(&metrics.CounterOpts{
	Name:           "wharf_watch_cache_history_refusals_total",
	Help:           "Writes of large objects refused (429) because their tenant's share of the resource's watch cache history was used.",
	StabilityLevel: metrics.ALPHA,
})
