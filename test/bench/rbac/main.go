// Command rbac benchmarks per-workspace RBAC through the real wharf-hub
// binary, end to end over loopback HTTPS.
//
// In one run against one hub it measures the latency of a GET of one
// ConfigMap as the hub admin (group system:masters, which short-circuits
// RBAC) and as user alice (bound to ClusterRole view in that workspace, so
// every request goes through the workspace's RBAC). It measures both twice:
// when only the target workspace holds a binding for alice, and after N-1
// more workspaces were created, each with its own ClusterRoleBinding for
// alice, so that N workspaces hold one. (Every workspace, root included, also
// holds its bootstrap bindings.)
// It prints p50/p99 of each, the ratio alice/admin (the cost of full RBAC
// on a get) and the ratio N/1 (whether authorization cost grows with the
// number of workspaces holding bindings). Numbers are printed, never
// asserted.
//
// Usage:
//
//	go run ./test/bench/rbac -bin bin/wharf-hub [-workspaces 10000] [-gets 2000]
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
	workspaces  int
	gets        int
	concurrency int
}

func main() {
	p := params{Command: benchkit.Command{Name: "rbac bench"}}
	p.RegisterFlags(15 * time.Minute)
	flag.IntVar(&p.workspaces, "workspaces", 10000, "second phase: workspaces with a ClusterRoleBinding for alice, the target included")
	flag.IntVar(&p.gets, "gets", 2000, "timed GETs per identity per measurement")
	flag.IntVar(&p.concurrency, "concurrency", 8, "concurrent workspace-creation workers")
	flag.Parse()
	p.Main(p.validate, func(ctx context.Context) error { return run(ctx, p) })
}

func (p params) validate() error {
	switch {
	case p.workspaces < 2:
		return errors.New("-workspaces must be at least 2")
	case p.gets < 1 || p.concurrency < 1:
		return errors.New("-gets and -concurrency must be at least 1")
	}
	return nil
}

func run(ctx context.Context, p params) error {
	fmt.Printf("wharf rbac benchmark: bin=%s workspaces=%d gets=%d concurrency=%d GOMAXPROCS=%d\n",
		p.Bin, p.workspaces, p.gets, p.concurrency, runtime.GOMAXPROCS(0))
	res, err := runScenario(ctx, p)
	if err != nil {
		return err
	}
	printResults(os.Stdout, p, res)
	return nil
}
