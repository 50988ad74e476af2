package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/wharfhub/wharf/test/bench/benchkit"
)

// printResults writes the side-by-side table of scenarios A and B and the
// ratios of interest.
func printResults(w io.Writer, p params, a, b result) {
	fmt.Fprintf(w, "\nA: one workspace with %d ConfigMaps, no other data\n", p.big)
	fmt.Fprintf(w, "B: %d workspaces x %d ConfigMaps + one workspace with %d ConfigMaps\n\n", p.workspaces, p.perWorkspace, p.big)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "metric\tA\tB\tB/A\t")
	row := func(name string, av, bv float64, format string) {
		ratio := "-"
		if av > 0 {
			ratio = fmt.Sprintf("%.2f", bv/av)
		}
		fmt.Fprintf(tw, "%s\t"+format+"\t"+format+"\t%s\t\n", name, av, bv, ratio)
	}
	onlyB := func(name string, bv float64, format string) {
		fmt.Fprintf(tw, "%s\t-\t"+format+"\t-\t\n", name, bv)
	}
	row("workspaces with data", float64(a.wsWithData), float64(b.wsWithData), "%.0f")
	row("ConfigMaps total", float64(a.totalCMs), float64(b.totalCMs), "%.0f")
	row("hub startup (s)", benchkit.Sec(a.startup), benchkit.Sec(b.startup), "%.1f")
	row("workspace creation (s)", benchkit.Sec(a.wsCreate), benchkit.Sec(b.wsCreate), "%.2f")
	onlyB(fmt.Sprintf("load %dx%d CMs (s)", p.workspaces, p.perWorkspace), benchkit.Sec(b.smallLoad), "%.1f")
	row(fmt.Sprintf("load %d CMs in big ws (s)", p.big), benchkit.Sec(a.bigLoad), benchkit.Sec(b.bigLoad), "%.1f")
	row("create throughput, big ws (/s)", benchkit.Rate(p.big, a.bigLoad), benchkit.Rate(p.big, b.bigLoad), "%.0f")
	row("create p50, all (ms)", benchkit.Ms(a.createAll.P50), benchkit.Ms(b.createAll.P50), "%.2f")
	row("create p99, all (ms)", benchkit.Ms(a.createAll.P99), benchkit.Ms(b.createAll.P99), "%.2f")
	row("create p50, big ws (ms)", benchkit.Ms(a.createBig.P50), benchkit.Ms(b.createBig.P50), "%.2f")
	row("create p99, big ws (ms)", benchkit.Ms(a.createBig.P99), benchkit.Ms(b.createBig.P99), "%.2f")
	row(fmt.Sprintf("list %d full p50 (ms)", p.big), benchkit.Ms(a.bigList.full.P50), benchkit.Ms(b.bigList.full.P50), "%.1f")
	row(fmt.Sprintf("list %d full p99 (ms)", p.big), benchkit.Ms(a.bigList.full.P99), benchkit.Ms(b.bigList.full.P99), "%.1f")
	row(fmt.Sprintf("list %d paged/%d p50 (ms)", p.big, pageSize), benchkit.Ms(a.bigList.paged.P50), benchkit.Ms(b.bigList.paged.P50), "%.1f")
	row(fmt.Sprintf("list %d paged/%d p99 (ms)", p.big, pageSize), benchkit.Ms(a.bigList.paged.P99), benchkit.Ms(b.bigList.paged.P99), "%.1f")
	row(fmt.Sprintf("first page of %d p50 (ms)", pageSize), benchkit.Ms(a.bigList.firstPage.P50), benchkit.Ms(b.bigList.firstPage.P50), "%.2f")
	if s := b.smallList; s != nil {
		onlyB(fmt.Sprintf("list %d full p50 (ms)", p.perWorkspace), benchkit.Ms(s.full.P50), "%.2f")
		onlyB(fmt.Sprintf("list %d full p99 (ms)", p.perWorkspace), benchkit.Ms(s.full.P99), "%.2f")
		onlyB(fmt.Sprintf("list %d paged/%d p50 (ms)", p.perWorkspace, pageSize), benchkit.Ms(s.paged.P50), "%.2f")
	}
	row("hub RSS idle (MiB)", mib(a.rssIdle), mib(b.rssIdle), "%.0f")
	row("hub RSS after load (MiB)", mib(a.rssLoaded), mib(b.rssLoaded), "%.0f")
	row("hub RSS after lists (MiB)", mib(a.rssAfterLists), mib(b.rssAfterLists), "%.0f")
	tw.Flush()

	fmt.Fprintln(w)
	fmt.Fprintf(w, "ratio B/A, list %d full p50: %.2f  p99: %.2f\n", p.big, benchkit.Div(b.bigList.full.P50, a.bigList.full.P50), benchkit.Div(b.bigList.full.P99, a.bigList.full.P99))
	fmt.Fprintf(w, "ratio B/A, list %d paged p50: %.2f\n", p.big, benchkit.Div(b.bigList.paged.P50, a.bigList.paged.P50))
	if s := b.smallList; s != nil {
		fmt.Fprintf(w, "ratio in B, list %d / list %d full p50: %.1f (object ratio %.0f)\n", p.big, p.perWorkspace, benchkit.Div(b.bigList.full.P50, s.full.P50), float64(p.big)/float64(p.perWorkspace))
		fmt.Fprintf(w, "ratio list %d in B / list %d in A, full p50: %.3f (B holds %.0fx A's objects)\n", p.perWorkspace, p.big, benchkit.Div(s.full.P50, a.bigList.full.P50), float64(b.totalCMs)/float64(a.totalCMs))
	}
	fmt.Fprintf(w, "ratio B/A, create p50 all: %.2f  p99 all: %.2f\n", benchkit.Div(b.createAll.P50, a.createAll.P50), benchkit.Div(b.createAll.P99, a.createAll.P99))
	fmt.Fprintf(w, "ratio B/A, hub RSS after load: %.2f\n", float64(b.rssLoaded)/float64(max(a.rssLoaded, 1)))
}

func mib(kib int64) float64 { return float64(kib) / 1024 }
