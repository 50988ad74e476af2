package tenantfilterbench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// requestCounts sums apiserver_request_total from a Prometheus text
// exposition: all requests, and TokenReviews alone.
type requestCounts struct {
	total, tokenReviews float64
	// byKind is keyed by "VERB resource" (e.g. "LIST namespaces"), to say
	// where a delta comes from.
	byKind map[string]float64
}

func (c requestCounts) sub(o requestCounts) requestCounts {
	d := requestCounts{total: c.total - o.total, tokenReviews: c.tokenReviews - o.tokenReviews, byKind: map[string]float64{}}
	for k, v := range c.byKind {
		if x := v - o.byKind[k]; x != 0 {
			d.byKind[k] = x
		}
	}
	return d
}

// top returns the n largest byKind entries, formatted.
func (c requestCounts) top(n int) string {
	type kv struct {
		k string
		v float64
	}
	var l []kv
	for k, v := range c.byKind {
		l = append(l, kv{k, v})
	}
	sort.Slice(l, func(i, j int) bool { return l[i].v > l[j].v || l[i].v == l[j].v && l[i].k < l[j].k })
	var parts []string
	for i := 0; i < len(l) && i < n; i++ {
		parts = append(parts, fmt.Sprintf("%s: %.0f", l[i].k, l[i].v))
	}
	return strings.Join(parts, ", ")
}

// parseRequestTotals reads the apiserver_request_total samples. The scrape
// of /metrics itself is not a resource request, so only samples with a
// non-empty resource label count: the scrapes do not inflate the deltas.
func parseRequestTotals(text string) (requestCounts, error) {
	c := requestCounts{byKind: map[string]float64{}}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		end := strings.LastIndex(line, "}")
		if end < 0 {
			return c, fmt.Errorf("malformed sample %q", line)
		}
		labels := parseLabels(line[len("apiserver_request_total{"):end])
		v, err := strconv.ParseFloat(strings.Fields(line[end+1:])[0], 64)
		if err != nil {
			return c, fmt.Errorf("sample %q: %w", line, err)
		}
		if labels["resource"] == "" {
			continue
		}
		c.total += v
		c.byKind[labels["verb"]+" "+labels["resource"]] += v
		if labels["resource"] == "tokenreviews" {
			c.tokenReviews += v
		}
	}
	return c, sc.Err()
}

func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for s != "" {
		eq := strings.Index(s, "=\"")
		if eq < 0 {
			break
		}
		name := strings.TrimLeft(s[:eq], ",")
		rest := s[eq+2:]
		i := 0
		for i < len(rest) && rest[i] != '"' {
			if rest[i] == '\\' {
				i++
			}
			i++
		}
		if i > len(rest) {
			i = len(rest)
		}
		out[name] = rest[:i]
		if i+1 >= len(rest) {
			break
		}
		s = rest[i+1:]
	}
	return out
}

// percentile returns the p-th percentile (0..100) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}

// rssKB reads VmRSS of a process from /proc.
func rssKB(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			if len(f) >= 2 {
				return strconv.ParseInt(f[1], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// latencies is one timed series of requests; err is the first failure.
type latencies struct {
	ds  []time.Duration
	err error
}

func series(ctx context.Context, n int, f func() error) *latencies {
	l := &latencies{}
	for range n {
		if ctx.Err() != nil {
			l.err = ctx.Err()
			return l
		}
		s := time.Now()
		if err := f(); err != nil {
			l.err = err
			return l
		}
		l.ds = append(l.ds, time.Since(s))
	}
	return l
}
