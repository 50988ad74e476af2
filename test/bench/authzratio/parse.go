package main

import (
	"regexp"
	"strconv"
	"strings"
)

// benchResult is one parsed result line.
type benchResult struct {
	group   string  // the name without the size element and the -procs suffix
	dim     string  // the size dimension, e.g. "clusters"
	size    int     // its value
	perSec  float64 // operations (decisions) per second
	metrics string  // "decisions/s" or "ops/s"
}

var (
	procsSuffix = regexp.MustCompile(`-\d+$`)
	sizeElem    = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=(\d+)$`)
)

// parseLine parses a result line such as
// "BenchmarkAuthorize/clusters=1/allow-2  174184  1189 ns/op  841139 decisions/s ...".
// Lines without a name=<int> element are ignored.
func parseLine(line string) (benchResult, bool) {
	f := strings.Fields(line)
	if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
		return benchResult{}, false
	}
	if _, err := strconv.Atoi(f[1]); err != nil {
		return benchResult{}, false
	}
	r := benchResult{}
	var rest []string
	for _, e := range strings.Split(procsSuffix.ReplaceAllString(f[0], ""), "/") {
		if m := sizeElem.FindStringSubmatch(e); m != nil && r.dim == "" {
			r.dim = m[1]
			r.size, _ = strconv.Atoi(m[2])
			continue
		}
		rest = append(rest, e)
	}
	if r.dim == "" {
		return benchResult{}, false
	}
	r.group = strings.Join(rest, "/")
	var nsPerOp float64
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			continue
		}
		switch f[i+1] {
		case "decisions/s":
			r.perSec, r.metrics = v, "decisions/s"
		case "ns/op":
			nsPerOp = v
		}
	}
	if r.perSec == 0 && nsPerOp > 0 {
		r.perSec, r.metrics = 1e9/nsPerOp, "ops/s"
	}
	return r, r.perSec > 0
}

// isFailure reports whether a go test output line reports a failure.
func isFailure(line string) bool {
	return strings.HasPrefix(line, "FAIL") || strings.HasPrefix(line, "--- FAIL") || strings.HasPrefix(line, "panic:")
}
