package ha

import (
	"math"
	"testing"
	"time"
)

// TestJudge checks the soak's flatness verdict on made-up series, without
// a bed: a steady leak fails, noise and a warm-up left out pass.
func TestJudge(t *testing.T) {
	// A deterministic wobble of ±3 around the level, as a heap's steps.
	wobble := func(i int) float64 { return 3 * math.Sin(float64(i)*1.7) }
	series := func(n int, f func(sec float64, i int) float64) []sample {
		var s []sample
		for i := range n {
			sec := float64(i * 5)
			s = append(s, sample{at: time.Duration(sec) * time.Second, liveMiB: f(sec, i)})
		}
		return s
	}
	cases := []struct {
		name  string
		s     []sample
		warm  time.Duration
		grows bool
	}{
		{"flat with noise", series(60, func(_ float64, i int) float64 { return 60 + wobble(i) }), 150 * time.Second, false},
		{"leak of 10 MiB a minute", series(60, func(sec float64, i int) float64 { return 60 + sec/6 + wobble(i) }), 150 * time.Second, true},
		{"warm-up then flat, warm-up left out", series(60, func(sec float64, i int) float64 { return 60 - 40*math.Exp(-sec/50) + wobble(i) }), 150 * time.Second, false},
		{"warm-up then flat, judged from the start", series(60, func(sec float64, i int) float64 { return 60 - 40*math.Exp(-sec/50) + wobble(i) }), 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sm := &sampler{s: c.s}
			st := sm.steady(c.warm)
			tr := trendOf(st, func(s sample) float64 { return s.liveMiB })
			over := st[len(st)-1].at - st[0].at
			if grows, _, growth, bound := judge(tr, over, 0.10); grows != c.grows {
				t.Errorf("grows = %v (slope %.2f ± %.2f/min, growth %.1f, bound %.1f), want %v", grows, tr.perMin, 2*tr.seMin, growth, bound, c.grows)
			}
		})
	}
}
