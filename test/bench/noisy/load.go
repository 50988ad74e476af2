package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wharfhub/wharf/test/bench/benchkit"
)

// opTimeout bounds one victim operation; a slower one is an error.
const opTimeout = 15 * time.Second

// loadStats is what a steady load saw.
type loadStats struct {
	rec    *benchkit.Recorder
	sum    benchkit.Summary
	errs   int
	dur    time.Duration
	sample []string // up to three distinct error messages
	// cpu is the hub process's CPU time (user and system) in the window,
	// when measured: unlike ops/s it hardly moves with the load others
	// put on a shared machine.
	cpu time.Duration
}

// cpuPerOp is the hub's CPU time per successful operation; 0 when not
// measured.
func (s loadStats) cpuPerOp() time.Duration {
	if s.sum.N == 0 {
		return 0
	}
	return s.cpu / time.Duration(s.sum.N)
}

func (s loadStats) ops() int { return s.sum.N + s.errs }

// errRate is the share of operations that failed.
func (s loadStats) errRate() float64 {
	if s.ops() == 0 {
		return 0
	}
	return float64(s.errs) / float64(s.ops())
}

// opsPerSec counts successful operations per second.
func (s loadStats) opsPerSec() float64 { return benchkit.Rate(s.sum.N, s.dur) }

// errorLog collects errors and keeps a few distinct messages.
type errorLog struct {
	mu     sync.Mutex
	n      int
	sample []string
}

func (l *errorLog) add(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	msg := err.Error()
	if len(msg) > 120 {
		msg = msg[:120]
	}
	for _, s := range l.sample {
		if s == msg {
			return
		}
	}
	if len(l.sample) < 3 {
		l.sample = append(l.sample, msg)
	}
}

// steadyLoad runs the mix (create, get, list, update, delete of a small
// ConfigMap in each person's home) on workers goroutines per person, each
// pausing pause between operations, until ctx ends. Every operation is
// timed on its own.
// mixSeq numbers the mix's ConfigMaps across all loads, so a ConfigMap a
// timed-out delete left behind never collides with a later one.
var mixSeq atomic.Int64

func steadyLoad(ctx context.Context, people []*person, workers int, pause time.Duration, tag string) loadStats {
	var rec benchkit.Recorder
	var errs errorLog
	start := time.Now()
	var wg sync.WaitGroup
	for _, pp := range people {
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					name := fmt.Sprintf("%s-%d-%d", tag, w, mixSeq.Add(1))
					mixCycle(ctx, pp, name, pause, &rec, &errs)
				}
			}()
		}
	}
	wg.Wait()
	errs.mu.Lock()
	defer errs.mu.Unlock()
	return loadStats{rec: &rec, sum: rec.Summarize(), errs: errs.n, dur: time.Since(start), sample: errs.sample}
}

// merge adds up rounds of a load: their latencies, errors and durations.
func merge(rounds []loadStats) loadStats {
	var rec benchkit.Recorder
	var out loadStats
	for _, r := range rounds {
		if r.rec != nil {
			rec.AddAll(r.rec)
		}
		out.errs += r.errs
		out.dur += r.dur
		out.cpu += r.cpu
		if len(out.sample) < 3 {
			out.sample = append(out.sample, r.sample...)
		}
	}
	out.rec, out.sum = &rec, rec.Summarize()
	return out
}

// mixCycle is one round of the mix. An operation cut short because ctx
// ended is neither recorded nor an error.
func mixCycle(ctx context.Context, pp *person, name string, pause time.Duration, rec *benchkit.Recorder, errs *errorLog) {
	cms := pp.cs.CoreV1().ConfigMaps("default")
	op := func(f func(ctx context.Context) error) bool {
		if ctx.Err() != nil {
			return false
		}
		octx, cancel := context.WithTimeout(ctx, opTimeout)
		defer cancel()
		t0 := time.Now()
		err := f(octx)
		d := time.Since(t0)
		if ctx.Err() != nil {
			return false
		}
		if err != nil {
			errs.add(err)
		} else {
			rec.Add(d)
		}
		if pause > 0 {
			sleep(ctx, pause)
		}
		return err == nil
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"bench": "mix"}}, Data: map[string]string{"v": "0"}}
	var got *corev1.ConfigMap
	if !op(func(ctx context.Context) (err error) {
		got, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		return err
	}) {
		return
	}
	op(func(ctx context.Context) error { _, err := cms.Get(ctx, name, metav1.GetOptions{}); return err })
	op(func(ctx context.Context) error {
		_, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "bench=mix"})
		return err
	})
	got.Data["v"] = "1"
	op(func(ctx context.Context) error { _, err := cms.Update(ctx, got, metav1.UpdateOptions{}); return err })
	// The delete runs even if ctx ended, so the mix leaves nothing behind.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
	defer cancel()
	if ctx.Err() != nil {
		_ = cms.Delete(dctx, name, metav1.DeleteOptions{})
		return
	}
	op(func(ctx context.Context) error { return cms.Delete(dctx, name, metav1.DeleteOptions{}) })
}

// probeLoop runs probe back to back until window ends and records each
// duration; a failed probe is an error. The probe in flight when window
// ends runs to its end (bounded by timeout and parent), so a probe slower
// than the window is still measured once.
func probeLoop(parent, window context.Context, timeout time.Duration, probe func(ctx context.Context) (time.Duration, error)) loadStats {
	var rec benchkit.Recorder
	var errs errorLog
	start := time.Now()
	for window.Err() == nil && parent.Err() == nil {
		pctx, cancel := context.WithTimeout(parent, timeout)
		d, err := probe(pctx)
		cancel()
		if parent.Err() != nil {
			break
		}
		if err != nil {
			errs.add(err)
			sleep(window, time.Second)
			continue
		}
		rec.Add(d)
	}
	return loadStats{sum: rec.Summarize(), errs: errs.n, dur: time.Since(start), sample: errs.sample}
}

// shortErrors joins the sample of error messages for the report.
func shortErrors(s []string) string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return strings.Join(s, " | ")
}
