package h2guard

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// Defaults. A busy legitimate client is far below them. TestOrdinaryCharges
// measures a kubectl-like request (a 1 KB bearer JWT, kubectl's headers)
// at ~600 bytes with its frame once its fields are indexed (what it
// decodes to is within FreeDecodedBytes of what it sends), so a
// controller at 100 requests a second on one connection charges ~60 KB a
// second, 12% of the refill, and one multiplexing ~870 a second or more is
// slowed to the refill, not closed (PaceableHeadBytes); answers of 10
// and 100 MiB cost some 2 KB (the client's WINDOW_UPDATEs are free up to
// one per 2 KiB the hub wrote, Go's client sends one per ~4 KiB read);
// an 8 MiB body ~2 KB (DATA is free); one head of the apiserver's
// MaxHeaderBytes (1 MiB) ~1.06 MB, so it passes on a fresh connection.
// An attacker's connection is closed after two amplified requests (~1 MB
// decoded each) or ~8,000 control frames, and may then do one every two
// seconds, or ~2,000 frames a second, on the refill.
const (
	DefaultBurst     = 2 << 20
	DefaultPerSecond = 512 << 10
	DefaultFrameCost = 256
	// DefaultMaxBlockBytes is the apiserver's MaxHeaderBytes and one
	// default-sized frame of slack: a head that the server would accept
	// is never cut.
	DefaultMaxBlockBytes = 1<<20 + FreeBlockBytes
	// DefaultBlockTimeout: a client sends a block's frames back to back;
	// 10 s is a 2 KB head at 200 bytes a second.
	DefaultBlockTimeout = 10 * time.Second
	// DefaultMaxOpenBlockBytes holds ~16 stalled maximal blocks at once
	// (the review's 3,000 took 3 GB), enough for ordinary clients, whose
	// blocks fit the free 16 KiB. Go's server decodes a long field sent
	// in small frames at a quadratic cost (25 MB copied for 900 KB in
	// 16 KiB frames): with 64 MiB, the ~70 blocks admitted again in each
	// wave of the #3 row after the timeouts cost the lease once in two
	// runs.
	DefaultMaxOpenBlockBytes = 16 << 20
	// DefaultHeaderTableSize is the HPACK dynamic table the server
	// advertises (x/net's default; the hub does not change it).
	DefaultHeaderTableSize = 4096
)

// PaceableHeadBytes: a header block that has cost a connection no more
// than this (its bytes and its frames' cost) is an ordinary request's
// head, and waits for a budget that cannot pay it now rather than closing
// the connection (HTTP/2's default frame size).
const PaceableHeadBytes = 16 << 10

// FreeBlockBytes of each open header block are not counted hub-wide:
// HTTP/2's default frame size, which every ordinary request's headers
// fit in.
const FreeBlockBytes = 16 << 10

// Options are the bounds of each connection. A zero bound is off.
type Options struct {
	// Burst is the bytes a connection may charge at once.
	Burst int
	// PerSecond refills the budget, bytes a second.
	PerSecond int
	// FrameCost is what each frame but DATA costs besides its payload.
	FrameCost int
	// MaxBlockBytes bounds the wire bytes of one header block.
	MaxBlockBytes int
	// BlockTimeout bounds how long a header block stays open.
	BlockTimeout time.Duration
	// MaxOpenBlockBytes bounds the bytes held in open header blocks,
	// hub-wide, beyond the first FreeBlockBytes of each.
	MaxOpenBlockBytes int64
	// HeaderTableSize must be the server's HPACK decoder table size
	// (http2.Server.MaxDecoderHeaderTableSize); not a flag.
	HeaderTableSize uint32
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{Burst: DefaultBurst, PerSecond: DefaultPerSecond, FrameCost: DefaultFrameCost,
		MaxBlockBytes: DefaultMaxBlockBytes, BlockTimeout: DefaultBlockTimeout, MaxOpenBlockBytes: DefaultMaxOpenBlockBytes,
		HeaderTableSize: DefaultHeaderTableSize}
}

// AddFlags registers the flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.Burst, "http2-header-bytes-per-connection", o.Burst,
		"Bytes of HTTP/2 header blocks (the larger of wire and decoded bytes) and control frames one client connection may send at once; "+
			"past it, and past --http2-header-bytes-per-second-per-connection after that, the hub closes the connection before its HTTP/2 server "+
			"decodes the rest (HPACK amplification, huge header blocks, control-frame floods). The hub's in-process client is exempt. 0 means no bound.")
	fs.IntVar(&o.PerSecond, "http2-header-bytes-per-second-per-connection", o.PerSecond,
		"Rate at which a connection's --http2-header-bytes-per-connection refills.")
	fs.IntVar(&o.FrameCost, "http2-frame-cost-bytes", o.FrameCost,
		"Bytes each HTTP/2 frame but DATA costs a connection's --http2-header-bytes-per-connection, besides its payload.")
	fs.IntVar(&o.MaxBlockBytes, "http2-max-header-block-bytes", o.MaxBlockBytes,
		"Wire bytes of one HTTP/2 header block (HEADERS and CONTINUATION); past it the hub closes the connection. 0 means no bound.")
	fs.DurationVar(&o.BlockTimeout, "http2-header-block-timeout", o.BlockTimeout,
		"How long an HTTP/2 header block may stay unfinished (no END_HEADERS); past it the hub closes the connection. 0 means no bound.")
	fs.Int64Var(&o.MaxOpenBlockBytes, "http2-max-open-header-block-bytes", o.MaxOpenBlockBytes,
		fmt.Sprintf("Bytes held in unfinished HTTP/2 header blocks on all connections, beyond the first %d of each; "+
			"the connection that would exceed it is read no further until another block ends, and closed at --http2-header-block-timeout. 0 means no bound.", FreeBlockBytes))
}

// Validate reports every invalid option.
func (o *Options) Validate() []error {
	var errs []error
	if o.Burst < 0 || o.PerSecond < 0 || o.FrameCost < 0 || o.MaxBlockBytes < 0 || o.BlockTimeout < 0 || o.MaxOpenBlockBytes < 0 {
		errs = append(errs, fmt.Errorf("the --http2-* header and frame bounds must not be negative"))
	}
	if o.Burst > 0 && o.PerSecond == 0 {
		errs = append(errs, fmt.Errorf("--http2-header-bytes-per-second-per-connection must be positive with --http2-header-bytes-per-connection"))
	}
	return errs
}
