package benchkit

import (
	"slices"
	"sync"
	"time"
)

// Recorder collects latencies from concurrent goroutines. The zero value is
// ready to use.
type Recorder struct {
	mu sync.Mutex
	d  []time.Duration
}

// Add records one latency.
func (r *Recorder) Add(d time.Duration) {
	r.mu.Lock()
	r.d = append(r.d, d)
	r.mu.Unlock()
}

// AddAll records every latency recorded by other.
func (r *Recorder) AddAll(other *Recorder) {
	other.mu.Lock()
	d := slices.Clone(other.d)
	other.mu.Unlock()
	r.mu.Lock()
	r.d = append(r.d, d...)
	r.mu.Unlock()
}

// Summary is the distribution of one set of latencies.
type Summary struct {
	N              int
	P50, P99, Mean time.Duration
}

// Summarize returns the count, p50, p99 (nearest rank) and mean of the
// latencies recorded so far; the zero Summary if there are none.
func (r *Recorder) Summarize() Summary {
	r.mu.Lock()
	d := slices.Clone(r.d)
	r.mu.Unlock()
	if len(d) == 0 {
		return Summary{}
	}
	slices.Sort(d)
	var total time.Duration
	for _, x := range d {
		total += x
	}
	return Summary{N: len(d), P50: Percentile(d, 50), P99: Percentile(d, 99), Mean: total / time.Duration(len(d))}
}

// Percentile returns the nearest-rank p-th percentile of sorted, which must
// not be empty.
func Percentile(sorted []time.Duration, p int) time.Duration {
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}
