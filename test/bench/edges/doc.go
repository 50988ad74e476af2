// Package edgesbench benchmarks the edges provider through a real hub:
//
//  1. Fleet: 1,000 edges (agents simulated in this process, one
//     revdial.Client each, each with its own joined agent credential)
//     connected to one edges provider through one wharf-hub. It reports the
//     provider's RSS per idle edge (VmRSS of the plugin process, found as the
//     hub's child), the hub's and the provider's CPU while idle over a
//     window, and the etcd writes per minute while nothing changes, counted
//     with a watch on the hub's own etcd (its unix socket) and split into the
//     Edge objects, the rest of the edges' workspace, and the hub's own keys.
//  2. Latency: the same GET with client-go straight to the edge cluster's
//     API server (the test/kube fixture) and through the edge (status.URL,
//     a real wharf-agent in impersonate mode); median, p90 and their ratio,
//     and the first request after the agent connects.
//  3. SSH throughput: a 100 MB cat from a real sshd (test/sshd), read by the
//     system ssh straight over loopback and through the tunnel (ProxyCommand
//     wharf ssh-proxy); MB/s and their ratio.
//
// Nothing is asserted: the numbers depend on the machine. The benchmark runs
// only when WHARF_BENCH_EDGES=1 (make bench sets it), so `go test -bench=.
// ./...` skips it:
//
//	make build
//	WHARF_BENCH_EDGES=1 go test -count=1 -run='^$' -bench='^BenchmarkEdges$' -benchtime=1x -timeout=15m ./test/bench/edges
//
// Flags after -args: -edges (fleet size, default 1000), -idle (idle window
// with the tunnels up, 60s), -baseline (idle window with the edges joined
// and no tunnel up, 20s), -requests (300), -ssh-mb (100), -ssh-runs (3).
// The join phase is bounded (100s) so the run stays near five minutes; if
// the provider joins fewer edges by then, the fleet is those and the
// report says so. Beside the measures the report gives the provider's own
// metrics (tunnel dials per GET, status writes) and the most written etcd
// keys, to say where a number comes from. The helpers in the package's
// non-test files (process accounting, the etcd write counter, the metrics
// parser, the report) have their own tests.
package edgesbench
