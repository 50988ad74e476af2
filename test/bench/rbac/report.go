package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// printResults writes the side-by-side table of both phases and the ratios
// the issue asks for.
func printResults(w io.Writer, p params, r result) {
	few, many := r.few, r.many
	fmt.Fprintf(w, "\nGET %s: %d sequential requests per identity per phase, keep-alive, admin and alice interleaved\n", r.targetPath, p.gets)
	fmt.Fprintf(w, "admin: group system:masters (short-circuits RBAC); alice: ClusterRoleBinding to view in %s (full per-workspace RBAC)\n", r.targetSpace)
	fmt.Fprintf(w, "phases: %d vs %d workspaces holding a binding for alice (every workspace, root included, also holds its bootstrap bindings)\n", few.boundWorkspaces, many.boundWorkspaces)
	fmt.Fprintf(w, "sanity: alice listing ConfigMaps in root, where she has no binding: HTTP %d\n", r.rootStatus)
	fmt.Fprintf(w, "hub startup: %.1fs\n", sec(r.startup))
	fmt.Fprintf(w, "workspace creation: %d more workspaces, each waited for and given a ClusterRoleBinding for alice, in %.1fs (%.1f workspaces/s, %d workers)\n\n",
		r.workspaces, sec(r.wsCreate), rate(r.workspaces, r.wsCreate), p.concurrency)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "GET latency (ms)\t%d bound ws\t%d bound ws\t%d/%d\t\n", few.boundWorkspaces, many.boundWorkspaces, many.boundWorkspaces, few.boundWorkspaces)
	row := func(name string, a, b time.Duration) {
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.2f\t\n", name, ms(a), ms(b), div(b, a))
	}
	row("admin p50", few.admin.p50, many.admin.p50)
	row("admin p99", few.admin.p99, many.admin.p99)
	row("admin mean", few.admin.mean, many.admin.mean)
	row("alice p50", few.alice.p50, many.alice.p50)
	row("alice p99", few.alice.p99, many.alice.p99)
	row("alice mean", few.alice.mean, many.alice.mean)
	tw.Flush()

	fmt.Fprintln(w)
	for _, ph := range []phase{few, many} {
		fmt.Fprintf(w, "ratio alice/admin (full RBAC / system:masters), %d bound workspace(s): p50 %.2f  p99 %.2f  mean %.2f\n",
			ph.boundWorkspaces, div(ph.alice.p50, ph.admin.p50), div(ph.alice.p99, ph.admin.p99), div(ph.alice.mean, ph.admin.mean))
	}
	fmt.Fprintf(w, "ratio %d/%d bound workspaces, alice (through RBAC): p50 %.2f  p99 %.2f  mean %.2f\n",
		many.boundWorkspaces, few.boundWorkspaces, div(many.alice.p50, few.alice.p50), div(many.alice.p99, few.alice.p99), div(many.alice.mean, few.alice.mean))
	fmt.Fprintf(w, "ratio %d/%d bound workspaces, admin (control, no RBAC): p50 %.2f  p99 %.2f  mean %.2f\n",
		many.boundWorkspaces, few.boundWorkspaces, div(many.admin.p50, few.admin.p50), div(many.admin.p99, few.admin.p99), div(many.admin.mean, few.admin.mean))
}

func sec(d time.Duration) float64 { return d.Seconds() }
func ms(d time.Duration) float64  { return float64(d) / float64(time.Millisecond) }

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

func div(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}
