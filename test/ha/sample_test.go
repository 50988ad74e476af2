package ha

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// sample is one reading of a hub process.
type sample struct {
	at                     time.Duration // since the sampler started
	rssMiB, goroutines, fd float64
}

// sampler reads a hub's RSS and open files from /proc and its goroutines
// from /metrics every interval.
type sampler struct {
	h  *hubProc
	b  *bed
	mu sync.Mutex // guards samples
	s  []sample
}

func (b *bed) startSampler(ctx context.Context, h *hubProc, every time.Duration) *sampler {
	sm := &sampler{h: h, b: b}
	hc := b.httpClient()
	go func() {
		start := time.Now()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			s := sample{at: time.Since(start), rssMiB: rssMiB(h.pid()), fd: openFiles(h.pid()), goroutines: goroutines(hc, h.URL)}
			if s.rssMiB > 0 && s.goroutines > 0 {
				sm.mu.Lock()
				sm.s = append(sm.s, s)
				sm.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return sm
}

func rssMiB(pid int) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) >= 2 && fs[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(fs[1], 64)
			return kb / 1024
		}
	}
	return 0
}

func openFiles(pid int) float64 {
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0
	}
	return float64(len(es))
}

func goroutines(hc *http.Client, base string) float64 {
	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+loadToken)
	resp, err := hc.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// trend is a least-squares line through one series: its slope per
// minute, the mean, and the residuals' standard deviation.
type trend struct{ perMin, mean, noise float64 }

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
	return trend{perMin: slope * 60, mean: sy / n, noise: math.Sqrt(ss / n)}
}

// trends fits RSS, goroutines and open files over the samples after the
// first quarter (warm-up: caches and pools filling).
func (sm *sampler) trends() (rss, gor, fds trend, n int) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	s := sm.s[len(sm.s)/4:]
	var xs, r, g, f []float64
	for _, v := range s {
		xs = append(xs, v.at.Seconds())
		r, g, f = append(r, v.rssMiB), append(g, v.goroutines), append(f, v.fd)
	}
	return fit(xs, r), fit(xs, g), fit(xs, f), len(s)
}

// flat checks that a series' growth over the run, projected from its
// slope, stays within noise: three residual deviations plus an allowance
// of frac of its mean (a heap grows in steps).
func flat(t *testing.T, what string, tr trend, over time.Duration, frac float64) {
	t.Helper()
	growth := tr.perMin * over.Minutes()
	bound := 3*tr.noise + frac*tr.mean
	if growth > bound {
		t.Errorf("%s grows %.1f over %s (slope %.2f/min), beyond noise %.1f", what, growth, over, tr.perMin, bound)
	}
}
