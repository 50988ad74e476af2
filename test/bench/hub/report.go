package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
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
	row("hub startup (s)", sec(a.startup), sec(b.startup), "%.1f")
	row("workspace creation (s)", sec(a.wsCreate), sec(b.wsCreate), "%.2f")
	onlyB(fmt.Sprintf("load %dx%d CMs (s)", p.workspaces, p.perWorkspace), sec(b.smallLoad), "%.1f")
	row(fmt.Sprintf("load %d CMs in big ws (s)", p.big), sec(a.bigLoad), sec(b.bigLoad), "%.1f")
	row("create throughput, big ws (/s)", rate(p.big, a.bigLoad), rate(p.big, b.bigLoad), "%.0f")
	row("create p50, all (ms)", ms(a.createAll.p50), ms(b.createAll.p50), "%.2f")
	row("create p99, all (ms)", ms(a.createAll.p99), ms(b.createAll.p99), "%.2f")
	row("create p50, big ws (ms)", ms(a.createBig.p50), ms(b.createBig.p50), "%.2f")
	row("create p99, big ws (ms)", ms(a.createBig.p99), ms(b.createBig.p99), "%.2f")
	row(fmt.Sprintf("list %d full p50 (ms)", p.big), ms(a.bigList.full.p50), ms(b.bigList.full.p50), "%.1f")
	row(fmt.Sprintf("list %d full p99 (ms)", p.big), ms(a.bigList.full.p99), ms(b.bigList.full.p99), "%.1f")
	row(fmt.Sprintf("list %d paged/%d p50 (ms)", p.big, pageSize), ms(a.bigList.paged.p50), ms(b.bigList.paged.p50), "%.1f")
	row(fmt.Sprintf("list %d paged/%d p99 (ms)", p.big, pageSize), ms(a.bigList.paged.p99), ms(b.bigList.paged.p99), "%.1f")
	row(fmt.Sprintf("first page of %d p50 (ms)", pageSize), ms(a.bigList.firstPage.p50), ms(b.bigList.firstPage.p50), "%.2f")
	if s := b.smallList; s != nil {
		onlyB(fmt.Sprintf("list %d full p50 (ms)", p.perWorkspace), ms(s.full.p50), "%.2f")
		onlyB(fmt.Sprintf("list %d full p99 (ms)", p.perWorkspace), ms(s.full.p99), "%.2f")
		onlyB(fmt.Sprintf("list %d paged/%d p50 (ms)", p.perWorkspace, pageSize), ms(s.paged.p50), "%.2f")
	}
	row("hub RSS idle (MiB)", mib(a.rssIdle), mib(b.rssIdle), "%.0f")
	row("hub RSS after load (MiB)", mib(a.rssLoaded), mib(b.rssLoaded), "%.0f")
	row("hub RSS after lists (MiB)", mib(a.rssAfterLists), mib(b.rssAfterLists), "%.0f")
	tw.Flush()

	fmt.Fprintln(w)
	fmt.Fprintf(w, "ratio B/A, list %d full p50: %.2f  p99: %.2f\n", p.big, div(b.bigList.full.p50, a.bigList.full.p50), div(b.bigList.full.p99, a.bigList.full.p99))
	fmt.Fprintf(w, "ratio B/A, list %d paged p50: %.2f\n", p.big, div(b.bigList.paged.p50, a.bigList.paged.p50))
	if s := b.smallList; s != nil {
		fmt.Fprintf(w, "ratio in B, list %d / list %d full p50: %.1f (object ratio %.0f)\n", p.big, p.perWorkspace, div(b.bigList.full.p50, s.full.p50), float64(p.big)/float64(p.perWorkspace))
		fmt.Fprintf(w, "ratio list %d in B / list %d in A, full p50: %.3f (B holds %.0fx A's objects)\n", p.perWorkspace, p.big, div(s.full.p50, a.bigList.full.p50), float64(b.totalCMs)/float64(a.totalCMs))
	}
	fmt.Fprintf(w, "ratio B/A, create p50 all: %.2f  p99 all: %.2f\n", div(b.createAll.p50, a.createAll.p50), div(b.createAll.p99, a.createAll.p99))
	fmt.Fprintf(w, "ratio B/A, hub RSS after load: %.2f\n", float64(b.rssLoaded)/float64(max(a.rssLoaded, 1)))
}

func sec(d time.Duration) float64 { return d.Seconds() }
func ms(d time.Duration) float64  { return float64(d) / float64(time.Millisecond) }
func mib(kib int64) float64       { return float64(kib) / 1024 }

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
