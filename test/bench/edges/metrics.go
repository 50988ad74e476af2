package edgesbench

import (
	"bufio"
	"strconv"
	"strings"
)

// Samples is a Prometheus text exposition, parsed into series → value.
// A series is the metric name with its label set as exposed, e.g.
// wharf_edges_tunnel_dials_total{result="success"}.
type Samples map[string]float64

// ParseSamples reads the text format: comments and blank lines are
// skipped, a trailing timestamp is ignored, and lines that do not parse are
// dropped (a benchmark reports what it can read).
func ParseSamples(text string) Samples {
	out := Samples{}
	s := bufio.NewScanner(strings.NewReader(text))
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		// The series ends at the closing brace of the labels, if any,
		// since label values may hold spaces.
		end := strings.IndexByte(line, ' ')
		if b := strings.IndexByte(line, '{'); b >= 0 && b < end || b >= 0 && end < 0 {
			c := strings.LastIndexByte(line, '}')
			if c < 0 {
				continue
			}
			end = c + 1
		}
		if end <= 0 || end >= len(line) {
			continue
		}
		fields := strings.Fields(line[end:])
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		out[line[:end]] = v
	}
	return out
}

// Sum adds the values of every series of metric name whose labels contain
// all of labels (each like `result="success"`).
func (s Samples) Sum(name string, labels ...string) float64 {
	var total float64
	for series, v := range s {
		n, rest, _ := strings.Cut(series, "{")
		if n != name {
			continue
		}
		ok := true
		for _, l := range labels {
			if !strings.Contains(rest, l) {
				ok = false
				break
			}
		}
		if ok {
			total += v
		}
	}
	return total
}
