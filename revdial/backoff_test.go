package revdial

import (
	"testing"
	"time"
)

func TestBackoffCeiling(t *testing.T) {
	b := Backoff{} // defaults: 1 s → 30 s
	tests := []struct {
		attempt int
		want    time.Duration
	}{
		{0, time.Second},
		{1, 2 * time.Second},
		{2, 4 * time.Second},
		{3, 8 * time.Second},
		{4, 16 * time.Second},
		{5, 30 * time.Second},
		{6, 30 * time.Second},
		{63, 30 * time.Second},   // no shift overflow
		{1000, 30 * time.Second}, // ditto
		{-1, time.Second},
	}
	for _, tc := range tests {
		if got := b.Ceiling(tc.attempt); got != tc.want {
			t.Errorf("Ceiling(%d) = %v, want %v", tc.attempt, got, tc.want)
		}
	}
}

// TestBackoffFullJitter checks that the draw spans the whole range
// [0, ceiling]: the bottom (full jitter, not "equal jitter") and the top.
func TestBackoffFullJitter(t *testing.T) {
	tests := []struct {
		name string
		rand func(int64) int64
		want func(ceil time.Duration) time.Duration
	}{
		{"lowest draw", func(int64) int64 { return 0 }, func(time.Duration) time.Duration { return 0 }},
		{"highest draw", func(n int64) int64 { return n - 1 }, func(c time.Duration) time.Duration { return c }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := Backoff{Rand: tc.rand}
			for a := 0; a < 10; a++ {
				if got, want := b.Delay(a), tc.want(b.Ceiling(a)); got != want {
					t.Errorf("Delay(%d) = %v, want %v", a, got, want)
				}
			}
		})
	}
	// And with the real generator every draw stays in bounds.
	var b Backoff
	for a := 0; a < 12; a++ {
		for i := 0; i < 200; i++ {
			if d := b.Delay(a); d < 0 || d > b.Ceiling(a) {
				t.Fatalf("Delay(%d) = %v outside [0, %v]", a, d, b.Ceiling(a))
			}
		}
	}
}
