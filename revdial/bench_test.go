package revdial

import (
	"context"
	"io"
	"net"
	"testing"
)

// The side-by-side comparison with other tunnels lives in the nested module
// test/bench/revdial; these benchmarks track this package on its own.

func BenchmarkDial(b *testing.B) {
	tests := []struct {
		name string
		warm int
	}{
		{"cold", 0},
		{"warm", 8},
	}
	for _, tc := range tests {
		b.Run(tc.name, func(b *testing.B) {
			opts := Options{WarmPickups: tc.warm}
			h := newHub(b, opts)
			ln, d := h.agent("bench", opts, nil)
			serve(b, ln, echo)
			buf := make([]byte, 1)
			b.ResetTimer()
			for b.Loop() {
				c, err := d.Dial(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.Write(buf); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
		})
	}
}

func BenchmarkThroughput(b *testing.B) {
	h := newHub(b, Options{})
	ln, d := h.agent("bench", Options{}, nil)
	serve(b, ln, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	c, err := d.Dial(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 256<<10)
	b.SetBytes(int64(len(buf)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
}
