// Package tenantfilterbench benchmarks the tenant filter's standalone
// binary in front of the kube-apiserver fixture (test/kube) holding 5,000
// namespaces across 500 tenants:
//
//  1. filtered `get ns` latency for a tenant owner through the proxy
//     (median, p90) against the same list straight to the kube-apiserver,
//     both unfiltered (what the issue compares with) and with the label
//     selector the proxy injects, as ratios (goal ≤ 1.2×);
//  2. downstream calls per filtered request once warm, from the fixture
//     kube-apiserver's apiserver_request_total (deltas, minus the idle
//     background measured over a window of the same length), TokenReviews
//     separately (capsule-proxy makes three or more per request);
//  3. the same latency for a user in 200 groups owning a tenant through one
//     of them (capsule-proxy issues #1028 and #1042);
//  4. the provider's RSS (VmRSS) once warm.
//
// Nothing is asserted: numbers depend on the machine. It runs only with
// WHARF_BENCH_TENANTFILTER=1 (make bench sets it) and the binaries of make
// build:
//
//	make build
//	WHARF_BENCH_TENANTFILTER=1 go test -count=1 -run='^$' -bench='^BenchmarkTenantFilter$' -benchtime=1x -timeout=30m ./test/bench/tenantfilter
//
// Flags after -args: -tenants (500), -per-tenant (10), -requests (300).
package tenantfilterbench
