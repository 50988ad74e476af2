package h2guard

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Reasons a connection is closed, the label of connsClosed.
const (
	reasonHeaderBytes = "header-bytes"      // the bucket could not pay a header block
	reasonFrames      = "frames"            // ... nor a frame
	reasonBlockSize   = "header-block-size" // past MaxBlockBytes
	reasonTimeout     = "header-block-timeout"
	reasonOpenBlocks  = "open-header-blocks" // timed out waiting for room under MaxOpenBlockBytes
	reasonHPACK       = "hpack"              // a block the server could not decode either
)

// What the guard did, for operators (hub administrators read /metrics): a
// rising closure count is an attack below the handlers being cut off, or
// a client far heavier than kubectl, client-go or a browser.
var (
	connsClosed = metrics.NewCounterVec(&metrics.CounterOpts{Name: "wharf_http2_connections_closed_total",
		Help: "Client HTTP/2 connections the hub closed below its HTTP/2 server, by reason: header-bytes and frames " +
			"(--http2-header-bytes-per-connection), header-block-size, header-block-timeout, open-header-blocks, hpack.",
		StabilityLevel: metrics.ALPHA}, []string{"reason"})
	headerWaits = metrics.NewCounter(&metrics.CounterOpts{Name: "wharf_http2_header_wait_seconds_total",
		Help: "Seconds client HTTP/2 connections waited for --http2-header-bytes-per-connection to refill before an ordinary request's " +
			"header block was read on (a busy connection is slowed, not closed).",
		StabilityLevel: metrics.ALPHA})
	openBlockBytes = metrics.NewGauge(&metrics.GaugeOpts{Name: "wharf_http2_open_header_block_bytes",
		Help:           "Bytes held in unfinished HTTP/2 header blocks, beyond the first 16 KiB of each, counted against --http2-max-open-header-block-bytes.",
		StabilityLevel: metrics.ALPHA})
)

func init() {
	// legacyregistry is the registry the apiserver's /metrics serves.
	legacyregistry.MustRegister(connsClosed, headerWaits, openBlockBytes)
}
