package h2guard

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/net/http2/hpack"
)

// TestInstructions: the representation count of blocks Go's encoder
// writes, or written by hand, whatever the chunks they arrive in.
func TestInstructions(t *testing.T) {
	encoded := func(update bool, fields ...hpack.HeaderField) []byte {
		var b bytes.Buffer
		e := hpack.NewEncoder(&b)
		if update {
			e.SetMaxDynamicTableSize(1024) // emitted before the next field
		}
		for _, f := range fields {
			_ = e.WriteField(f)
		}
		return b.Bytes()
	}
	long := strings.Repeat("a", 70_000)
	for _, tc := range []struct {
		name  string
		block []byte
		want  int64
	}{
		{"static indexed", encoded(false, hpack.HeaderField{Name: ":method", Value: "GET"}, hpack.HeaderField{Name: ":path", Value: "/"}), 2},
		{"new names, Huffman and not, long values", encoded(false, hpack.HeaderField{Name: "x-a", Value: long},
			hpack.HeaderField{Name: "authorization", Value: "Bearer " + jwt, Sensitive: true},
			hpack.HeaderField{Name: "x-b", Value: "\xfe\xfe"}, hpack.HeaderField{Name: "x-c", Value: ""}), 4},
		{"a size update first, then an indexed field twice", encoded(true, hpack.HeaderField{Name: "x-d", Value: "d"},
			hpack.HeaderField{Name: "x-d", Value: "d"}), 3},
		{"size updates", sizeUpdates(1000), 1000},
		{"literals by hand", literals(20_000), 5},
		{"an index past a one-byte prefix", []byte{0xff, 0x80, 0x01, 0x82}, 2},
	} {
		for _, chunk := range []int{1, 2, 3, 7, 4096, len(tc.block)} {
			var s instructions
			for p := tc.block; len(p) > 0; {
				n := min(chunk, len(p))
				s.scan(p[:n])
				p = p[n:]
			}
			if s.n != tc.want || s.state != sFirst {
				t.Errorf("%s, chunks of %d: %d representations (want %d), state %d", tc.name, chunk, s.n, tc.want, s.state)
			}
		}
	}
}
