package h2guard

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// TestAttacksClosed: each attack shape of the sixth review is closed by
// the guard, for the reason its metric says, at the defaults.
func TestAttacksClosed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		attack func(t *testing.T, s *testServer, r *rawConn)
		want   string
	}{
		{"#1 HPACK amplification: a 4,000-byte field, then requests referencing it 240 times", func(t *testing.T, s *testServer, r *rawConn) {
			amp := hpack.HeaderField{Name: "x-amp", Value: bigValue}
			r.sendBlock(1, r.block(amp), true)
			refs := make([]hpack.HeaderField, 240)
			for i := range refs {
				refs[i] = amp
			}
			for sid := uint32(3); sid < 400 && !r.gone(); sid += 2 {
				if b := r.block(refs...); len(b) > 300 || !r.sendBlock(sid, b, true) {
					if len(b) > 300 {
						t.Fatalf("the references took %d bytes", len(b))
					}
					break
				}
			}
		}, reasonHeaderBytes},
		{"#2 header blocks of 900 KB, again and again", func(t *testing.T, s *testServer, r *rawConn) {
			for sid := uint32(1); sid < 100 && !r.gone(); sid += 2 {
				// never indexed: each block sends the whole value again
				b := r.block(hpack.HeaderField{Name: "x-big", Value: strings.Repeat("b", 900_000), Sensitive: true})
				if !r.sendBlock(sid, b, true) {
					break
				}
			}
		}, reasonHeaderBytes},
		{"a block of size updates, which decodes to nothing", func(t *testing.T, s *testServer, r *rawConn) {
			r.sendBlock(1, sizeUpdates(900_000), false)
		}, reasonHeaderBytes},
		{"fields Huffman coded at 3 wire bytes a byte, past the wire cap", func(t *testing.T, s *testServer, r *rawConn) {
			var b []byte
			for range 4 {
				b = append(b, literal(strings.Repeat("\xfe", 100_000), true)...)
			}
			if len(b) < DefaultMaxBlockBytes+(16<<10) {
				t.Fatalf("%d bytes", len(b))
			}
			r.sendBlock(1, b, true)
		}, reasonBlockSize},
		{"#3 a block left open", func(t *testing.T, s *testServer, r *rawConn) {
			r.sendBlock(1, literals(16<<10), false)
			waitFor(t, s.clock.HasWaiters)
			s.clock.Step(DefaultBlockTimeout + time.Second)
		}, reasonTimeout},
		{"W2 PING flood", flood(func(fr *http2.Framer, i int) error { return fr.WritePing(false, [8]byte{byte(i)}) }), reasonFrames},
		{"W2 SETTINGS flood", flood(func(fr *http2.Framer, i int) error { return fr.WriteSettings() }), reasonFrames},
		{"W2 WINDOW_UPDATE flood", flood(func(fr *http2.Framer, i int) error { return fr.WriteWindowUpdate(0, 1) }), reasonFrames},
		{"W2 PRIORITY flood", flood(func(fr *http2.Framer, i int) error {
			return fr.WritePriority(uint32(2*i+1), http2.PriorityParam{Weight: 15})
		}), reasonFrames},
		{"an undecodable block", func(t *testing.T, s *testServer, r *rawConn) {
			r.sendBlock(1, []byte{0x80}, true) // index 0 does not exist
		}, reasonHPACK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := closedCounts(t)
			s := startServer(t, *NewOptions(), nil)
			r := s.raw(t)
			tc.attack(t, s, r)
			r.waitGone(t)
			after := closedCounts(t)
			for reason, v := range after {
				want := before[reason]
				if reason == tc.want {
					want++
				}
				if v != want {
					t.Errorf("wharf_http2_connections_closed_total{reason=%q} went from %v to %v, want %v", reason, before[reason], v, want)
				}
			}
			if held := s.guard.held.Load(); held != 0 {
				t.Errorf("%d bytes still counted in open blocks", held)
			}
		})
	}
}

// flood writes frames of one kind until the connection is gone.
func flood(frame func(fr *http2.Framer, i int) error) func(t *testing.T, s *testServer, r *rawConn) {
	return func(t *testing.T, s *testServer, r *rawConn) {
		for i := 0; i < 1_000_000; i++ {
			if r.gone() || !r.write(func(fr *http2.Framer) error { return frame(fr, i) }) {
				return
			}
		}
		t.Fatal("a million frames went through")
	}
}

// waitFor polls cond: the guard works on the server's goroutines.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal(fmt.Errorf("gave up waiting"))
		}
	}
}
