// Command hub benchmarks the wharf-hub binary: list latency of a large
// workspace when it is the only workspace with data (scenario A) versus when
// many other workspaces also hold data (scenario B), ConfigMap create latency
// during the loads, and the hub's RSS. Each scenario runs against a fresh hub
// with its own embedded etcd in a temp dir, on loopback. Results are printed
// as a table with ratios; nothing is asserted.
//
// Usage:
//
//	go run ./test/bench/hub -bin bin/wharf-hub [-workspaces 1000] [-per-workspace 100] [-big 10000]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/wharfhub/wharf/test/bench/benchkit"
)

// params are the benchmark's flags; Bin and Timeout are in Command.
type params struct {
	benchkit.Command
	workspaces   int
	perWorkspace int
	big          int
	concurrency  int
	lists        int
	qps          float64
	burst        int
}

func main() {
	p := params{Command: benchkit.Command{Name: "hub bench"}}
	p.RegisterFlags(20 * time.Minute)
	flag.IntVar(&p.workspaces, "workspaces", 1000, "scenario B: number of small workspaces")
	flag.IntVar(&p.perWorkspace, "per-workspace", 100, "scenario B: ConfigMaps in each small workspace")
	flag.IntVar(&p.big, "big", 10000, "ConfigMaps in the big workspace (both scenarios)")
	flag.IntVar(&p.concurrency, "concurrency", 8, "concurrent create workers")
	flag.IntVar(&p.lists, "lists", 20, "timed lists per measurement")
	flag.Float64Var(&p.qps, "qps", 2000, "client QPS")
	flag.IntVar(&p.burst, "burst", 2000, "client burst")
	flag.Parse()
	p.Main(p.validate, func(ctx context.Context) error { return run(ctx, p) })
}

func (p params) validate() error {
	switch {
	case p.big < 1 || p.workspaces < 0 || p.perWorkspace < 1:
		return errors.New("-big and -per-workspace must be at least 1, -workspaces at least 0")
	case p.concurrency < 1 || p.lists < 1:
		return errors.New("-concurrency and -lists must be at least 1")
	}
	return nil
}

func run(ctx context.Context, p params) error {
	fmt.Printf("wharf hub benchmark: bin=%s workspaces=%d per-workspace=%d big=%d concurrency=%d lists=%d qps=%g burst=%d GOMAXPROCS=%d\n",
		p.Bin, p.workspaces, p.perWorkspace, p.big, p.concurrency, p.lists, p.qps, p.burst, runtime.GOMAXPROCS(0))
	a, err := runScenario(ctx, p, false)
	if err != nil {
		return fmt.Errorf("scenario A: %w", err)
	}
	b, err := runScenario(ctx, p, true)
	if err != nil {
		return fmt.Errorf("scenario B: %w", err)
	}
	printResults(os.Stdout, p, a, b)
	return nil
}
