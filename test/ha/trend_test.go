package ha

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// trend is a least-squares line through one series: its slope per
// minute with the slope's standard error, the mean, and the residuals'
// standard deviation.
type trend struct{ perMin, seMin, mean, noise float64 }

func fit(xs, ys []float64) trend {
	n := float64(len(xs))
	if n < 3 {
		return trend{}
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	slope := (n*sxy - sx*sy) / (n*sxx - sx*sx)
	icept := (sy - slope*sx) / n
	var ss float64
	for i := range xs {
		r := ys[i] - (icept + slope*xs[i])
		ss += r * r
	}
	mx := sx / n
	se := math.Sqrt(ss/(n-2)) / math.Sqrt(sxx-n*mx*mx)
	return trend{perMin: slope * 60, seMin: se * 60, mean: sy / n, noise: math.Sqrt(ss / n)}
}

func (t trend) String() string {
	return fmt.Sprintf("%.1f / %+.2f ± %.2f", t.mean, t.perMin, 2*t.seMin)
}

// series is one signal of a sampler's samples.
type series struct {
	name string
	get  func(sample) float64
}

var signals = []series{
	{"RSS MiB", func(s sample) float64 { return s.rssMiB }},
	{"live heap MiB (after GC)", func(s sample) float64 { return s.liveMiB }},
	{"heap in use MiB", func(s sample) float64 { return s.heapInuseMiB }},
	{"heap alloc MiB", func(s sample) float64 { return s.heapAllocMiB }},
	{"goroutines", func(s sample) float64 { return s.goroutines }},
	{"open files", func(s sample) float64 { return s.fd }},
}

// steady is the samples after the first skip fraction (warm-up).
func (sm *sampler) steady(skip float64) []sample {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	return append([]sample(nil), sm.s[int(float64(len(sm.s))*skip):]...)
}

// trendOf fits one signal over samples.
func trendOf(s []sample, get func(sample) float64) trend {
	var xs, ys []float64
	for _, v := range s {
		xs, ys = append(xs, v.at.Seconds()), append(ys, get(v))
	}
	return fit(xs, ys)
}

// writeSamples dumps every sample as CSV, for a look at the series' shape.
func (sm *sampler) writeSamples(dir string) error {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	var b strings.Builder
	b.WriteString("seconds,rss_mib,live_mib,heap_inuse_mib,heap_alloc_mib,goroutines,fds\n")
	for _, s := range sm.s {
		fmt.Fprintf(&b, "%.1f,%.1f,%.1f,%.1f,%.1f,%.0f,%.0f\n", s.at.Seconds(), s.rssMiB, s.liveMiB, s.heapInuseMiB, s.heapAllocMiB, s.goroutines, s.fd)
	}
	return os.WriteFile(filepath.Join(dir, sm.h.Name+"-samples.csv"), []byte(b.String()), 0o644)
}
