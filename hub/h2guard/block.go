package h2guard

import (
	"golang.org/x/net/http2/hpack"
	"k8s.io/utils/clock"
)

// blockFrame counts a HEADERS or CONTINUATION frame whose header was just
// read: the server allocates its whole payload now and keeps the block's
// fields until END_HEADERS.
func (c *conn) blockFrame() error {
	if !c.inBlock {
		c.openBlock()
	} else if err := c.checkTimeout(); err != nil {
		return err
	}
	c.blockHeld += int64(c.length)
	if m := c.g.opts.MaxBlockBytes; m > 0 && c.blockHeld > int64(m) {
		return c.kill(reasonBlockSize)
	}
	return c.reserve(max(c.blockHeld-FreeBlockBytes, 0))
}

// reserve counts the open block's want bytes hub-wide. Past the bound
// the connection waits, its server reading nothing more from it, until
// another block ends or its own block times out (then it is closed for
// open-header-blocks): closed at once, an attacker dials again at once,
// and the handshakes and megabytes sent again cost more than the wait
// (the sixth review's #3 shape dialled ~165 times a second so).
func (c *conn) reserve(want int64) error {
	for {
		freed := c.g.freedCh() // before trying: a release in between wakes us
		c.mu.Lock()
		if c.reason != "" {
			r := c.reason
			c.mu.Unlock()
			return &closedError{reason: r}
		}
		d := want - c.reserved
		if d <= 0 || c.g.reserve(d) {
			c.reserved = max(c.reserved, want)
			c.waiting = false
			c.mu.Unlock()
			return nil
		}
		c.waiting = true
		c.mu.Unlock()
		select {
		case <-freed:
		case <-c.done:
			if err := c.closedErr(); err != nil {
				return err
			}
			return ErrClosed
		}
	}
}

// openBlock starts a header block and its timeout.
func (c *conn) openBlock() {
	c.inBlock = true
	c.blockWire, c.decoded, c.charged, c.headCost, c.blockHeld = 0, 0, 0, 0, 0
	c.instr.reset()
	c.blockStart = c.g.clock.Now()
	d := c.g.opts.BlockTimeout
	if d <= 0 {
		return
	}
	dc, ok := c.g.clock.(clock.WithDelayedExecution)
	if !ok {
		return // checked on each read only
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	gen := c.gen
	// A client that stops sending in the middle of a block sends nothing
	// more to read: only a timer notices.
	// The callback goes on in a goroutine of its own: a fake clock runs
	// it under its lock, which stopping the timer takes again.
	c.timer = dc.AfterFunc(d, func() { go c.timeout(gen) })
}

// timeout closes the connection if its block gen is still open.
func (c *conn) timeout(gen int) {
	c.mu.Lock()
	open := c.gen == gen && c.reason == ""
	reason := reasonTimeout
	if c.waiting {
		reason = reasonOpenBlocks
	}
	c.mu.Unlock()
	if open {
		_ = c.kill(reason)
	}
}

// checkTimeout closes a connection whose block is open past its time.
func (c *conn) checkTimeout() error {
	if d := c.g.opts.BlockTimeout; d > 0 && c.g.clock.Since(c.blockStart) > d {
		return c.kill(reasonTimeout)
	}
	return nil
}

// instructionCost is what each HPACK representation costs at least:
// a field's 32 bytes of overhead, as HTTP/2 counts it.
const instructionCost = 32

// FreeDecodedBytes of what a header block decodes to are not charged
// beyond its wire bytes: an ordinary head, whose fields a client indexes
// after its first request (Go's client indexes a 1 KB bearer JWT, so a
// kubectl-like GET sends ~100 bytes that decode to ~2 KB). Charged from
// the first decoded byte, such a request cost ~2,300 bytes with its
// frame, ~600 so: a client multiplexing 250 a second on one connection
// ran out of budget. What an amplified block decodes to past this is
// charged in full.
const FreeDecodedBytes = 4 << 10

// fragment decodes the next bytes of the open block's fragment and
// charges the largest of the block's wire bytes, decoded bytes past
// FreeDecodedBytes and representations (instructionCost each) so far.
func (c *conn) fragment(b []byte) error {
	c.blockWire += int64(len(b))
	if c.dec != nil {
		c.instr.scan(b)
		if err := c.decode(b); err != nil {
			return err
		}
	}
	cost := max(c.blockWire, c.decoded-FreeDecodedBytes, instructionCost*c.instr.n)
	if err := c.chargeHead(cost-c.charged, 0, reasonHeaderBytes); err != nil {
		return err
	}
	c.charged = cost
	return c.checkTimeout()
}

// decode gives the decoder whole representations only. Fed a long
// string in pieces, hpack's decoder copies what it has of the string
// again for every piece (quadratic: 25 MB for a 900 KB field in 16 KiB
// reads); held here until the representation ends, it is copied once.
func (c *conn) decode(b []byte) error {
	if c.instr.state != sFirst {
		c.pending = append(c.pending, b...)
		return nil
	}
	if len(c.pending) > 0 {
		c.pending = append(c.pending, b...)
		b = c.pending
	}
	_, err := c.dec.Write(b)
	c.pending = c.pending[:0]
	if cap(c.pending) > FreeBlockBytes {
		c.pending = nil // a long field's buffer is not kept
	}
	if err != nil {
		// The server's decoder fails too (a connection error); the
		// guard's table no longer mirrors it.
		return c.kill(reasonHPACK)
	}
	return nil
}

// emit counts a decoded field as HTTP/2 counts a header list's size.
func (c *conn) emit(f hpack.HeaderField) {
	c.decoded += int64(len(f.Name) + len(f.Value) + 32)
}

// endBlock ends the open block at END_HEADERS.
func (c *conn) endBlock() error {
	c.inBlock = false
	if c.dec != nil {
		// A block ending inside a representation is the server's
		// COMPRESSION_ERROR; what is held is decoded for the record.
		if len(c.pending) > 0 {
			if _, err := c.dec.Write(c.pending); err != nil {
				c.pending = nil
				return c.kill(reasonHPACK)
			}
			c.pending = nil
		}
		if err := c.dec.Close(); err != nil {
			return c.kill(reasonHPACK)
		}
	}
	c.release()
	return nil
}
