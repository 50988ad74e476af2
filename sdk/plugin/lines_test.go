package plugin

import (
	"strings"
	"sync"
	"testing"
)

type recorder struct{ lines []string }

func (r *recorder) Write(p []byte) (int, error) {
	r.lines = append(r.lines, string(p))
	return len(p), nil
}

func TestLineWriter(t *testing.T) {
	long := strings.Repeat("x", maxLine+5)
	tests := []struct {
		name   string
		writes []string
		want   []string
	}{
		{name: "go-plugin style", writes: []string{"hello", "\n", "world", "\n"}, want: []string{"hello\n", "world\n"}},
		{name: "several per write", writes: []string{"a\nb\nc"}, want: []string{"a\n", "b\n", "c\n"}},
		{name: "empty lines", writes: []string{"\n\n"}, want: []string{"\n", "\n"}},
		{name: "partial flushed", writes: []string{"panic: boom"}, want: []string{"panic: boom\n"}},
		{name: "overlong cut", writes: []string{long}, want: []string{long[:maxLine] + "\n", "xxxxx\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			lw := &lineWriter{outMu: &sync.Mutex{}, out: rec}
			for _, w := range tt.writes {
				if n, err := lw.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			lw.Flush()
			if strings.Join(rec.lines, "|") != strings.Join(tt.want, "|") {
				t.Fatalf("lines = %q, want %q", rec.lines, tt.want)
			}
		})
	}
}
