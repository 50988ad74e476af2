package h2guard

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// rawConn is an attacker's HTTP/2 connection: frames written by hand,
// and a reader that acknowledges SETTINGS and counts what comes back
// until the connection ends.
type rawConn struct {
	fr       *http2.Framer
	mu       sync.Mutex // the framer's writes
	done     chan struct{}
	pingAcks atomic.Int64
	resets   atomic.Int64 // RST_STREAM frames from the server
	answers  atomic.Int64 // HEADERS frames from the server
	goaway   atomic.Value // the server's GOAWAY, if any
	enc      *hpack.Encoder
	hb       bytes.Buffer
}

func (s *testServer) raw(t *testing.T) *rawConn {
	t.Helper()
	c := s.dial(t)
	r := &rawConn{fr: http2.NewFramer(c, c), done: make(chan struct{})}
	r.enc = hpack.NewEncoder(&r.hb)
	r.enc.SetMaxDynamicTableSizeLimit(4096)
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	if err := r.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	acked := make(chan struct{})
	var ackOnce sync.Once
	go func() {
		defer close(r.done)
		for {
			f, err := r.fr.ReadFrame()
			if err != nil {
				return
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					r.write(func(fr *http2.Framer) error { return fr.WriteSettingsAck() })
					ackOnce.Do(func() { close(acked) })
				}
			case *http2.PingFrame:
				if f.IsAck() {
					r.pingAcks.Add(1)
				}
			case *http2.RSTStreamFrame:
				r.resets.Add(1)
			case *http2.HeadersFrame:
				r.answers.Add(1)
			case *http2.GoAwayFrame:
				// the server's own protocol error; it closes next
				r.goaway.Store(fmt.Sprintf("%v %q", f.ErrCode, f.DebugData()))
			}
		}
	}()
	// The server's SETTINGS are acknowledged before any test frame: an
	// ack between a HEADERS and its CONTINUATION is a protocol error.
	select {
	case <-acked:
	case <-r.done:
	case <-time.After(30 * time.Second):
		t.Fatal("no SETTINGS from the server")
	}
	return r
}

// write runs w on the framer; false once the connection is gone.
func (r *rawConn) write(w func(fr *http2.Framer) error) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return w(r.fr) == nil
}

func (r *rawConn) gone() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// waitGone waits for the hub to close the connection; the bound only
// keeps a broken test from hanging.
func (r *rawConn) waitGone(t *testing.T) {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the connection was not closed")
	}
}

// block encodes a request's header block: the pseudo-headers and extra.
func (r *rawConn) block(extra ...hpack.HeaderField) []byte {
	r.hb.Reset()
	for _, f := range append([]hpack.HeaderField{{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "https"},
		{Name: ":authority", Value: "127.0.0.1"}, {Name: ":path", Value: "/"}}, extra...) {
		_ = r.enc.WriteField(f)
	}
	return bytes.Clone(r.hb.Bytes())
}

// sendBlock sends b as HEADERS and CONTINUATION frames of at most 16 KiB
// on stream sid; end: whether the last one carries END_HEADERS.
func (r *rawConn) sendBlock(sid uint32, b []byte, end bool) bool {
	const frame = 16 << 10
	first := true
	for first || len(b) > 0 {
		n := min(frame, len(b))
		last := n == len(b)
		frag := b[:n]
		b = b[n:]
		ok := r.write(func(fr *http2.Framer) error {
			if first {
				return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: sid, BlockFragment: frag, EndStream: true, EndHeaders: last && end})
			}
			return fr.WriteContinuation(sid, last && end, frag)
		})
		if !ok {
			return false
		}
		first = false
	}
	return true
}

// literal encodes a never-indexed field named x with value v, Huffman
// coded or not.
func literal(v string, huffman bool) []byte {
	b := []byte{0x10, 0x01, 'x'}
	if !huffman {
		return append(appendInt(b, 0, uint64(len(v))), v...)
	}
	h := hpack.AppendHuffmanString(nil, v)
	return append(appendInt(b, 0x80, uint64(len(h))), h...)
}

// appendInt appends an HPACK integer of a 7-bit prefix with flag bits.
func appendInt(b []byte, flag byte, v uint64) []byte {
	if v < 0x7f {
		return append(b, flag|byte(v))
	}
	b = append(b, flag|0x7f)
	for v -= 0x7f; v >= 0x80; v >>= 7 {
		b = append(b, byte(v)|0x80)
	}
	return append(b, byte(v))
}

// literals is exactly n bytes (n >= 4) of literal fields.
func literals(n int) []byte {
	var b []byte
	for len(b) < n {
		rest := n - len(b)
		f := literal(strings.Repeat("v", 4000), false)
		if rest < len(f)+8 {
			f = literal("", false)
			for l := rest; l > 0; l-- {
				if g := literal(strings.Repeat("v", l), false); len(g) == rest {
					f = g
					break
				}
			}
		}
		b = append(b, f...)
	}
	return b
}

// sizeUpdates is n bytes of HPACK "dynamic table size update to 0": a
// block that decodes to nothing, which Go's decoder takes anywhere while
// its table is empty.
func sizeUpdates(n int) []byte { return bytes.Repeat([]byte{0x20}, n) }

var bigValue = strings.Repeat("v", 4000)
