package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/wharfhub/wharf/test/bench/benchkit"
)

// printResults writes the side-by-side table of both phases and the ratios
// the issue asks for.
func printResults(w io.Writer, p params, r result) {
	few, many := r.few, r.many
	fmt.Fprintf(w, "\nGET %s: %d sequential requests per identity per phase, keep-alive, admin and alice interleaved\n", r.targetPath, p.gets)
	fmt.Fprintf(w, "admin: group system:masters (short-circuits RBAC); alice: ClusterRoleBinding to view in %s (full per-workspace RBAC)\n", r.targetSpace)
	fmt.Fprintf(w, "phases: %d vs %d workspaces holding a binding for alice (every workspace, root included, also holds its bootstrap bindings)\n", few.boundWorkspaces, many.boundWorkspaces)
	fmt.Fprintf(w, "sanity: alice listing ConfigMaps in root, where she has no binding: HTTP %d\n", r.rootStatus)
	fmt.Fprintf(w, "hub startup: %.1fs\n", benchkit.Sec(r.startup))
	fmt.Fprintf(w, "workspace creation: %d more workspaces, each waited for and given a ClusterRoleBinding for alice, in %.1fs (%.1f workspaces/s, %d workers)\n\n",
		r.workspaces, benchkit.Sec(r.wsCreate), benchkit.Rate(r.workspaces, r.wsCreate), p.concurrency)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "GET latency (ms)\t%d bound ws\t%d bound ws\t%d/%d\t\n", few.boundWorkspaces, many.boundWorkspaces, many.boundWorkspaces, few.boundWorkspaces)
	row := func(name string, a, b time.Duration) {
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.2f\t\n", name, benchkit.Ms(a), benchkit.Ms(b), benchkit.Div(b, a))
	}
	row("admin p50", few.admin.P50, many.admin.P50)
	row("admin p99", few.admin.P99, many.admin.P99)
	row("admin mean", few.admin.Mean, many.admin.Mean)
	row("alice p50", few.alice.P50, many.alice.P50)
	row("alice p99", few.alice.P99, many.alice.P99)
	row("alice mean", few.alice.Mean, many.alice.Mean)
	tw.Flush()

	fmt.Fprintln(w)
	for _, ph := range []phase{few, many} {
		fmt.Fprintf(w, "ratio alice/admin (full RBAC / system:masters), %d bound workspace(s): p50 %.2f  p99 %.2f  mean %.2f\n",
			ph.boundWorkspaces, benchkit.Div(ph.alice.P50, ph.admin.P50), benchkit.Div(ph.alice.P99, ph.admin.P99), benchkit.Div(ph.alice.Mean, ph.admin.Mean))
	}
	fmt.Fprintf(w, "ratio %d/%d bound workspaces, alice (through RBAC): p50 %.2f  p99 %.2f  mean %.2f\n",
		many.boundWorkspaces, few.boundWorkspaces, benchkit.Div(many.alice.P50, few.alice.P50), benchkit.Div(many.alice.P99, few.alice.P99), benchkit.Div(many.alice.Mean, few.alice.Mean))
	fmt.Fprintf(w, "ratio %d/%d bound workspaces, admin (control, no RBAC): p50 %.2f  p99 %.2f  mean %.2f\n",
		many.boundWorkspaces, few.boundWorkspaces, benchkit.Div(many.admin.P50, few.admin.P50), benchkit.Div(many.admin.P99, few.admin.P99), benchkit.Div(many.admin.Mean, few.admin.Mean))
}
