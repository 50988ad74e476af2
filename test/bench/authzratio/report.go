package main

import (
	"fmt"
	"io"
)

// printRatios prints, per group, the throughput at the smallest and the
// largest size and their ratio, in input order. With repeated runs
// (-count) the last result of each size counts.
func printRatios(out io.Writer, results []benchResult) {
	type span struct {
		dim      string
		min, max benchResult
	}
	var order []string
	spans := map[string]*span{}
	for _, r := range results {
		key := r.dim + "\x00" + r.group
		s, ok := spans[key]
		if !ok {
			spans[key] = &span{dim: r.dim, min: r, max: r}
			order = append(order, key)
			continue
		}
		if r.size <= s.min.size {
			s.min = r
		}
		if r.size >= s.max.size {
			s.max = r
		}
	}
	fmt.Fprintln(out)
	for _, key := range order {
		s := spans[key]
		if s.min.size == s.max.size {
			continue
		}
		fmt.Fprintf(out, "%s: %.0f %s with %s=%d, %.0f with %s=%d; ratio %s=%d/%s=%d: %.2f\n",
			s.min.group, s.min.perSec, s.min.metrics, s.dim, s.min.size, s.max.perSec, s.dim, s.max.size,
			s.dim, s.max.size, s.dim, s.min.size, s.max.perSec/s.min.perSec)
	}
}
