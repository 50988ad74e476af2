package h2guard

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"golang.org/x/time/rate"
	"k8s.io/utils/clock"
)

// HTTP/2 frame header flags the parser needs (RFC 9113, 6.2).
const (
	flagEndHeaders = 0x4
	flagPadded     = 0x8
	flagPriority   = 0x20
	frameHeaderLen = 9
	// windowUpdateFreeBytes: one WINDOW_UPDATE free per this many bytes
	// the server wrote, twice what Go's client sends (one on the stream
	// and one on the connection per 4 KiB read).
	windowUpdateFreeBytes = 2 << 10
)

// conn is one guarded client connection. Its parser state belongs to the
// server's reading goroutine (Read); mu guards what a timer or Close
// touch from others.
type conn struct {
	net.Conn
	g      *Guard
	bucket *rate.Limiter  // nil: no budget
	dec    *hpack.Decoder // nil: no budget, nothing to decode for

	preface int // client preface bytes still to come
	hdr     [frameHeaderLen]byte
	nhdr    int // bytes of hdr read; frameHeaderLen: in a payload
	typ     http2.FrameType
	flags   http2.Flags
	length  int // the current frame's payload length
	remain  int // payload bytes still to come
	needPad bool
	skip    int // HEADERS priority bytes still to skip
	frag    int // block fragment bytes still to come in this frame

	inBlock            bool
	blockStart         time.Time
	blockWire, decoded int64 // of the open block
	charged            int64 // of the open block's bytes, to the bucket
	headCost           int64 // of the open block, with its frames' cost
	instr              instructions
	pending            []byte // fragment bytes of an unfinished representation
	blockHeld          int64  // wire bytes of the open block's frames

	// windowUpdates counts the client's WINDOW_UPDATE frames; written,
	// the bytes the server wrote (its writing goroutine).
	windowUpdates int64
	written       atomic.Int64
	// spent is what the bucket was charged in all (tests measure it).
	spent int64

	// done is closed when the connection is closed (by the guard or
	// the server): a read waiting for room hub-wide ends.
	done     chan struct{}
	doneOnce sync.Once

	mu       sync.Mutex
	reason   string      // why the guard closed it; "" while open
	waiting  bool        // its read waits for room hub-wide
	reserved int64       // counted hub-wide for the open block
	gen      int         // the open block's number, for its timer
	timer    clock.Timer // the open block's timeout
}

// Read reads what the server reads and parses it before handing it
// over; a connection past a bound is closed and the read fails, so the
// server never decodes what it was sent.
func (c *conn) Read(p []byte) (int, error) {
	if err := c.closedErr(); err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		if gerr := c.scan(p[:n]); gerr != nil {
			return 0, gerr
		}
	}
	if err != nil {
		if gerr := c.closedErr(); gerr != nil {
			return n, gerr
		}
	}
	return n, err
}

// Write counts what the server writes, which the client's WINDOW_UPDATEs
// acknowledge.
func (c *conn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.written.Add(int64(n))
	return n, err
}

// scan parses p, the next bytes of the stream.
func (c *conn) scan(p []byte) error {
	for len(p) > 0 {
		if c.preface > 0 {
			n := min(c.preface, len(p))
			c.preface -= n
			p = p[n:]
			continue
		}
		if c.nhdr < frameHeaderLen {
			n := copy(c.hdr[c.nhdr:], p)
			c.nhdr += n
			p = p[n:]
			if c.nhdr < frameHeaderLen {
				return nil
			}
			if err := c.frameStart(); err != nil {
				return err
			}
		} else {
			n := min(c.remain, len(p))
			c.remain -= n
			if err := c.payload(p[:n]); err != nil {
				return err
			}
			p = p[n:]
		}
		if c.remain == 0 {
			if err := c.frameEnd(); err != nil {
				return err
			}
		}
	}
	return nil
}

// frameStart charges a frame whose header was just read.
func (c *conn) frameStart() error {
	h := c.hdr
	c.length = int(h[0])<<16 | int(h[1])<<8 | int(h[2])
	c.remain = c.length
	c.typ, c.flags = http2.FrameType(h[3]), http2.Flags(h[4])
	switch c.typ {
	case http2.FrameData:
		return nil
	case http2.FrameHeaders:
		c.needPad = c.flags&flagPadded != 0
		c.skip = 0
		if c.flags&flagPriority != 0 {
			c.skip = 5
		}
		c.frag = 0
		if !c.needPad {
			c.frag = max(c.length-c.skip, 0)
		}
		if !c.inBlock {
			c.openBlock()
		}
		if err := c.chargeHead(int64(c.g.opts.FrameCost), int64(c.length), reasonFrames); err != nil {
			return err
		}
		return c.blockFrame()
	case http2.FrameContinuation:
		c.needPad, c.skip, c.frag = false, 0, c.length
		if err := c.chargeHead(int64(c.g.opts.FrameCost), int64(c.length), reasonFrames); err != nil {
			return err
		}
		return c.blockFrame()
	case http2.FrameWindowUpdate:
		// A client acknowledges what the hub wrote: Go's at least every
		// 4 KiB read, on the stream and on the connection. So many are
		// free (a 10 MiB answer brings ~2,500); a flood beyond them is
		// charged like any other frame.
		c.windowUpdates++
		if c.windowUpdates <= c.written.Load()/windowUpdateFreeBytes {
			return nil
		}
		return c.charge(int64(c.g.opts.FrameCost+c.length), reasonFrames, false)
	default:
		// SETTINGS, PING, WINDOW_UPDATE, PRIORITY, RST_STREAM, GOAWAY and
		// unknown types: the server reads each and answers some.
		return c.charge(int64(c.g.opts.FrameCost+c.length), reasonFrames, false)
	}
}

// payload takes the next bytes of the current frame's payload.
func (c *conn) payload(b []byte) error {
	if c.typ != http2.FrameHeaders && c.typ != http2.FrameContinuation {
		return nil
	}
	if c.needPad && len(b) > 0 {
		c.needPad = false
		pad := int(b[0])
		b = b[1:]
		// A padding past the payload is the server's protocol error.
		c.frag = max(c.length-1-c.skip-pad, 0)
	}
	if c.skip > 0 {
		n := min(c.skip, len(b))
		c.skip -= n
		b = b[n:]
	}
	n := min(c.frag, len(b))
	if n == 0 {
		return nil // padding
	}
	c.frag -= n
	return c.fragment(b[:n])
}

// frameEnd ends the current frame: a block ends with END_HEADERS.
func (c *conn) frameEnd() error {
	c.nhdr = 0
	if (c.typ == http2.FrameHeaders || c.typ == http2.FrameContinuation) && c.flags&flagEndHeaders != 0 {
		return c.endBlock()
	}
	return nil
}

// chargeHead charges n more bytes of the open header block: an ordinary
// head that the budget cannot pay now waits for it; a bigger one closes
// the connection. Ordinary: all it cost so far, and the payloads of its
// frames, read or not (frame: the one whose header was just read), are
// within PaceableHeadBytes. A frame's payload counts from its header on:
// the server allocates it then, and a connection paced at the start of a
// 256 KiB frame would have it read and allocated before it is closed
// (with only the cost so far counted, the sixth review's 900 KB blocks
// cost the lease again, 3 runs in 6).
func (c *conn) chargeHead(n, frame int64, reason string) error {
	c.headCost += n
	return c.charge(n, reason, c.headCost <= PaceableHeadBytes && c.blockHeld+frame <= PaceableHeadBytes)
}

// charge takes n bytes of the connection's budget. If the budget cannot
// pay them now, the connection is closed, or, with pace, its read waits
// until the budget has refilled enough: a busy client multiplexing many
// ordinary requests on one connection is slowed to the refill rate, not
// cut off with every request in flight (the noisy-neighbour bench lost
// 0.3% of its requests so). An attacker's heads are past
// PaceableHeadBytes (amplified or huge) and her control frames are never
// paced: those still close the connection.
func (c *conn) charge(n int64, reason string, pace bool) error {
	if c.bucket == nil || n <= 0 {
		return nil
	}
	now := c.g.clock.Now()
	// Paid at once, the usual case: AllowN allocates nothing, where a
	// reservation is allocated for every frame and fragment.
	if c.bucket.AllowN(now, int(n)) {
		c.spent += n
		return nil
	}
	if !pace {
		return c.kill(reason)
	}
	r := c.bucket.ReserveN(now, int(n))
	if !r.OK() {
		return c.kill(reason)
	}
	d := r.DelayFrom(now)
	c.spent += n
	if d <= 0 {
		return nil
	}
	headerWaits.Add(d.Seconds())
	select {
	case <-c.g.clock.After(d):
		return nil
	case <-c.done:
		if err := c.closedErr(); err != nil {
			return err
		}
		return ErrClosed
	}
}
