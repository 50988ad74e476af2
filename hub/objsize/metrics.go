package objsize

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	remembered = metrics.NewGauge(&metrics.GaugeOpts{
		Name:           "wharf_object_sizes_remembered",
		Help:           "Big stored objects whose size the hub remembers to weigh the requests that name them.",
		StabilityLevel: metrics.ALPHA,
	})
	evicted = metrics.NewCounter(&metrics.CounterOpts{
		Name:           "wharf_object_sizes_evicted_total",
		Help:           "Remembered object sizes forgotten because a tenant's or the hub's table was full.",
		StabilityLevel: metrics.ALPHA,
	})
)

func init() {
	legacyregistry.MustRegister(remembered, evicted)
}
