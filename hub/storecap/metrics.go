package storecap

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

func gauge(name, help string) *metrics.Gauge {
	return metrics.NewGauge(&metrics.GaugeOpts{Name: name, Help: help, StabilityLevel: metrics.ALPHA})
}

func counter(name, help string) *metrics.Counter {
	return metrics.NewCounter(&metrics.CounterOpts{Name: name, Help: help, StabilityLevel: metrics.ALPHA})
}

var (
	quotaBytes   = gauge("wharf_store_quota_bytes", "etcd's backend quota as the hub knows it.")
	sizeBytes    = gauge("wharf_store_size_bytes", "Size of etcd's database file (dbSize, the largest member's).")
	inUseBytes   = gauge("wharf_store_size_in_use_bytes", "Bytes of etcd's database in use (dbSizeInUse, the largest member's).")
	highWater    = gauge("wharf_store_high_water", "1 while the store is above its high-water mark and non-admin writes are refused, else 0.")
	nospace      = gauge("wharf_store_nospace_alarm", "1 while etcd's NOSPACE alarm is armed, else 0.")
	refused      = counter("wharf_store_refused_writes_total", "Writes refused because the store is above its high-water mark.")
	compactions  = counter("wharf_store_compactions_total", "Compactions to the current revision made by the store monitor.")
	defrags      = counter("wharf_store_defrags_total", "Defragmentations of an etcd member made by the store monitor.")
	alarmDisarms = counter("wharf_store_alarm_disarms_total", "NOSPACE alarms the store monitor disarmed.")
	reclaims     = counter("wharf_store_rewrite_compactions_total", "Compactions to the previous poll's revision made because replaced revisions (rewrites) neared the high-water mark.")
	pollErrors   = counter("wharf_store_poll_errors_total", "Failed reads of etcd's status or alarms.")
)

func init() {
	// legacyregistry is the registry the apiserver's /metrics serves.
	legacyregistry.MustRegister(quotaBytes, sizeBytes, inUseBytes, highWater, nospace, refused, compactions, defrags, alarmDisarms, reclaims, pollErrors)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
