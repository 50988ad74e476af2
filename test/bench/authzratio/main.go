// Command authzratio summarizes `go test -bench` output of a benchmark
// whose sub-benchmarks vary one size dimension, such as
// BenchmarkAuthorize/clusters=1/... versus BenchmarkAuthorize/clusters=10000/...
// in hub/authz/rbac. It copies its input to stdout, then prints for every
// sub-benchmark the throughput at the smallest and the largest size and
// their ratio (largest/smallest; 1.00 means size does not matter). The
// throughput is the decisions/s metric when reported, else 1e9/(ns/op).
// It exits non-zero if the input holds a FAIL line or no benchmark at all.
// Numbers are printed, never asserted.
//
// Usage:
//
//	go test -run='^$' -bench='^BenchmarkAuthorize$' ./hub/authz/rbac | go run ./test/bench/authzratio
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
)

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "authzratio:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	var (
		results []benchResult
		failed  bool
	)
	s := bufio.NewScanner(in)
	s.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for s.Scan() {
		line := s.Text()
		fmt.Fprintln(out, line)
		if r, ok := parseLine(line); ok {
			results = append(results, r)
		}
		if isFailure(line) {
			failed = true
		}
	}
	if err := s.Err(); err != nil {
		return fmt.Errorf("read benchmark output: %w", err)
	}
	if len(results) == 0 {
		return errors.New("no benchmark results in input")
	}
	printRatios(out, results)
	if failed {
		return errors.New("benchmark output reports a failure")
	}
	return nil
}
