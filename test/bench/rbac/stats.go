package main

import (
	"slices"
	"sync"
	"time"
)

// recorder collects latencies from concurrent goroutines.
type recorder struct {
	mu sync.Mutex
	d  []time.Duration
}

func (r *recorder) add(d time.Duration) {
	r.mu.Lock()
	r.d = append(r.d, d)
	r.mu.Unlock()
}

// summary is the distribution of one set of latencies.
type summary struct {
	n              int
	p50, p99, mean time.Duration
}

// summarize returns the count, p50, p99 (nearest rank) and mean.
func (r *recorder) summarize() summary {
	r.mu.Lock()
	d := slices.Clone(r.d)
	r.mu.Unlock()
	if len(d) == 0 {
		return summary{}
	}
	slices.Sort(d)
	var total time.Duration
	for _, x := range d {
		total += x
	}
	return summary{n: len(d), p50: percentile(d, 50), p99: percentile(d, 99), mean: total / time.Duration(len(d))}
}

// percentile returns the nearest-rank p-th percentile of sorted d.
func percentile(sorted []time.Duration, p int) time.Duration {
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}
