package ha

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
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
	frac float64 // allowance, of its mean, for steps; 0: printed, not judged
	// memory: judged only once the steady part starts after the hubs'
	// memory levels off (levelOff).
	memory bool
}

// levelOff is when a hub's RSS and live heap level off under the soak's
// load: its watch caches' event history, the storage layer's bounded
// caches and the connection and buffer pools fill first (warmUp). A soak
// whose steady part starts earlier (make test's 30 s: at 15 s) sees that
// filling as growth: after the third outside review's fixes, 39 → 42 MiB
// of live heap in its last 15 s, flat at 75 MiB over a 3-minute soak.
const levelOff = 150 * time.Second

var signals = []series{
	{"RSS MiB", func(s sample) float64 { return s.rssMiB }, 0.15, true},
	{"live heap MiB (after GC)", func(s sample) float64 { return s.liveMiB }, 0.10, true},
	// Between collections the heap swings with the GC cycle: shown for
	// the record, judged through the live heap and RSS.
	{"heap in use MiB", func(s sample) float64 { return s.heapInuseMiB }, 0, true},
	{"heap alloc MiB", func(s sample) float64 { return s.heapAllocMiB }, 0, true},
	{"goroutines", func(s sample) float64 { return s.goroutines }, 0.10, false},
	{"open files", func(s sample) float64 { return s.fd }, 0.10, false},
}

// steady is the samples taken after the warm-up.
func (sm *sampler) steady(warm time.Duration) []sample {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	var out []sample
	for _, s := range sm.s {
		if s.at >= warm {
			out = append(out, s)
		}
	}
	return out
}

// halves is a signal's mean over the first and the second half of s: a
// leak moves the second up by about half the growth; warm-up that has
// ended leaves them level.
func halves(s []sample, get func(sample) float64) (float64, float64) {
	mean := func(s []sample) float64 {
		var t float64
		for _, v := range s {
			t += get(v)
		}
		return t / float64(max(len(s), 1))
	}
	return mean(s[:len(s)/2]), mean(s[len(s)/2:])
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
