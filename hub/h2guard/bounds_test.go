package h2guard

import (
	"bytes"
	"errors"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	testingclock "k8s.io/utils/clock/testing"
)

// TestOpenBlocksHubWide: the bytes held in open blocks beyond the first
// FreeBlockBytes of each are bounded on all connections together; the
// connection that would pass the bound waits, read no further, until a
// block ends (then it goes on) or its own block times out (then it is
// closed).
func TestOpenBlocksHubWide(t *testing.T) {
	o := *NewOptions()
	o.MaxOpenBlockBytes = 100 << 10
	s := startServer(t, o, nil)
	before := closedCounts(t)
	held := func(want int64) func() bool { return func() bool { return s.guard.held.Load() == want } }
	// Each holds 16 KiB free and 48 KiB counted.
	open := func() *rawConn {
		r := s.raw(t)
		r.sendBlock(1, literals(64<<10), false)
		return r
	}
	a := open()
	waitFor(t, held(48<<10))
	b := open()
	waitFor(t, held(96<<10))
	c := open()
	waitFor(t, func() bool { return s.waiting(2) })
	if h := s.guard.held.Load(); h != 96<<10 {
		t.Errorf("%d bytes held with the third waiting, want %d", h, 96<<10)
	}
	// a finishes its block (a request with no pseudo-headers: the server
	// resets the stream, not the connection); c takes the room.
	a.write(func(fr *http2.Framer) error { return fr.WriteContinuation(1, true, nil) })
	waitFor(t, func() bool { return a.resets.Load() == 1 || a.gone() })
	waitFor(t, func() bool { return !s.waiting(2) && s.guard.held.Load() == 96<<10 })
	d := open()
	waitFor(t, func() bool { return s.waiting(3) })
	// b, c and d time out, d while it waits.
	s.clock.Step(DefaultBlockTimeout + time.Second)
	for _, r := range []*rawConn{b, c, d} {
		r.waitGone(t)
	}
	after := closedCounts(t)
	if got := after[reasonTimeout] + after[reasonOpenBlocks] - before[reasonTimeout] - before[reasonOpenBlocks]; got != 3 {
		t.Errorf("%v connections closed for header-block-timeout or open-header-blocks, want 3", got)
	}
	if a.gone() {
		t.Error("a connection within the bound was closed")
	}
	waitFor(t, held(0))
}

// TestBlockTimeout: a block finished within the timeout is served, one
// left open past it is closed, on the fake clock.
func TestBlockTimeout(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pause  time.Duration
		closed bool
	}{
		{"finished after 9 s", 9 * time.Second, false},
		{"left open 11 s", 11 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, *NewOptions(), nil)
			before := closedCount(t, reasonTimeout)
			r := s.raw(t)
			b := r.block(hpack.HeaderField{Name: "x-pad", Value: "p"})
			r.write(func(fr *http2.Framer) error {
				return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b[:3], EndStream: true})
			})
			waitFor(t, s.clock.HasWaiters)
			s.clock.Step(tc.pause)
			if tc.closed {
				r.waitGone(t)
			} else {
				r.write(func(fr *http2.Framer) error { return fr.WriteContinuation(1, true, b[3:]) })
				waitFor(t, func() bool { return r.answers.Load() == 1 || r.gone() })
				if r.gone() {
					t.Fatalf("the connection was closed (GOAWAY %v)", r.goaway.Load())
				}
			}
			if got := closedCount(t, reasonTimeout) - before; got != map[bool]float64{true: 1}[tc.closed] {
				t.Errorf("%v connections closed for header-block-timeout", got)
			}
		})
	}
}

// TestExempt: the hub's own connections are not wrapped, and a flood on
// one is answered in full.
func TestExempt(t *testing.T) {
	s := startServer(t, *NewOptions(), func(string) bool { return true })
	r := s.raw(t)
	const pings = 20_000 // past twice what the default budget takes
	// In batches: past 10,000 unwritten answers Go's server closes the
	// connection itself (ENHANCE_YOUR_CALM).
	for i := range pings {
		if !r.write(func(fr *http2.Framer) error { return fr.WritePing(false, [8]byte{byte(i)}) }) {
			t.Fatalf("write %d failed (GOAWAY %v)", i, r.goaway.Load())
		}
		if (i+1)%1000 == 0 {
			waitFor(t, func() bool { return r.pingAcks.Load() == int64(i+1) || r.gone() })
		}
	}
	if r.gone() {
		t.Fatalf("the exempt connection was closed after %d pings", r.pingAcks.Load())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.conns[0].(*conn); ok {
		t.Error("an exempt connection was wrapped")
	}
}

// TestParserSplits: the same frames give the same charges however the
// reads split them (one byte at a time up to whole), with PADDED and
// PRIORITY HEADERS, CONTINUATION and frames of other types between.
func TestParserSplits(t *testing.T) {
	var wire bytes.Buffer
	wire.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(&wire, nil)
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	fields := []hpack.HeaderField{{Name: ":method", Value: "GET"}, {Name: ":path", Value: "/a"}, {Name: "x-long", Value: string(bytes.Repeat([]byte("L"), 300))}}
	want := int64(0)
	for _, f := range fields {
		_ = enc.WriteField(f)
		want += int64(len(f.Name) + len(f.Value) + 32)
	}
	b := hb.Bytes()
	_ = fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b[:100], PadLength: 7,
		Priority: http2.PriorityParam{StreamDep: 0, Weight: 9}})
	_ = fr.WriteContinuation(1, true, b[100:])
	_ = fr.WriteData(1, true, bytes.Repeat([]byte("d"), 5000))
	_ = fr.WritePing(false, [8]byte{})
	stream := wire.Bytes()
	// The block costs its wire bytes (what it decodes to is within
	// FreeDecodedBytes of them); then SETTINGS (6 bytes), the block's two
	// frames, PING (8 bytes); DATA is free.
	wantSpent := max(int64(len(b)), want-FreeDecodedBytes, instructionCost*int64(len(fields))) + 4*DefaultFrameCost + 6 + 8
	for _, chunk := range []int{1, 2, 9, 10, 24, 100, 4096, len(stream)} {
		a, _ := net.Pipe()
		g := New(*NewOptions(), nil, testingclock.NewFakeClock(time.Now()))
		c := g.Wrap(a).(*conn)
		for p := stream; len(p) > 0; {
			n := min(chunk, len(p))
			if err := c.scan(p[:n]); err != nil {
				t.Fatalf("chunks of %d: %v", chunk, err)
			}
			p = p[n:]
		}
		if c.decoded != want || c.spent != wantSpent || c.inBlock || c.nhdr != 0 {
			t.Errorf("chunks of %d: decoded %d (want %d), spent %d (want %d), in a block %v, %d header bytes pending",
				chunk, c.decoded, want, c.spent, wantSpent, c.inBlock, c.nhdr)
		}
		_ = a.Close()
	}
}

// TestPacedOnlyWhileOrdinary: on an empty budget, a HEADERS frame whose
// payload is an ordinary head waits for the refill; one past
// PaceableHeadBytes closes the connection at its frame header, before
// the server reads (and allocates) its payload.
func TestPacedOnlyWhileOrdinary(t *testing.T) {
	for _, tc := range []struct {
		name   string
		length int
		paced  bool
	}{
		{"a 1 KiB HEADERS frame waits for the refill", 1 << 10, true},
		{"a 20 KiB HEADERS frame is refused at its header", 20 << 10, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := *NewOptions()
			o.BlockTimeout = 0 // the clock's only waiter is a paced read
			clk := testingclock.NewFakeClock(time.Now())
			a, b := net.Pipe()
			defer b.Close()
			c := New(o, nil, clk).Wrap(a).(*conn)
			c.preface = 0
			c.bucket.AllowN(clk.Now(), int(c.bucket.TokensAt(clk.Now()))) // spent
			var wire bytes.Buffer
			_ = http2.NewFramer(&wire, nil).WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: make([]byte, tc.length), EndHeaders: true})
			done := make(chan error, 1)
			go func() { done <- c.scan(wire.Bytes()[:frameHeaderLen]) }()
			var err error
			returned := false
			waitFor(t, func() bool {
				select {
				case err = <-done:
					returned = true
					return true
				default:
					return clk.HasWaiters()
				}
			})
			if tc.paced {
				if returned {
					t.Fatalf("the frame was not paced: %v", err)
				}
				clk.Step(time.Second)
				if err := <-done; err != nil {
					t.Fatalf("after the refill: %v", err)
				}
				return
			}
			if !returned {
				t.Fatal("the frame's header waited for the budget")
			}
			if !errors.Is(err, ErrClosed) {
				t.Fatalf("got %v, want the connection closed", err)
			}
		})
	}
}
