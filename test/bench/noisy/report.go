package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/wharfhub/wharf/test/bench/benchkit"
)

// Goals of issue 24, printed beside the figures.
const (
	goalP99Ratio = 2.0  // victim p99 under attack / baseline
	goalOverhead = 0.05 // throughput cost of limits when nobody misbehaves
)

// ratio formats under/base; "-" when there is no baseline.
func ratio(base, under time.Duration) string {
	if base <= 0 || under <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", benchkit.Div(under, base))
}

// ratioF is ratio for rates.
func ratioF(base, under float64) string {
	if base <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", under/base)
}

func ms(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", benchkit.Ms(d))
}

func pct(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

func mibB(b int64) float64 { return float64(b) / (1 << 20) }

// overhead is how much slower after is than before, as a share of before
// (negative if faster).
func overhead(before, after float64) float64 {
	if before <= 0 {
		return 0
	}
	return (before - after) / before
}

// verdict says whether a phase meets the goals.
func verdict(r phaseResult) string {
	// No renewal seen at all means the provider was not running: a
	// failed measurement or a stopped provider, never a pass.
	ok := (!r.lease.watched || r.lease.seen > 0) && r.under.errs == 0 && r.lease.missed == 0 && r.lease.fenceStops == 0 && !r.store.nospace && !r.nospaceAfterCleanup
	if r.base.sum.P99 > 0 && benchkit.Div(r.under.sum.P99, r.base.sum.P99) > goalP99Ratio {
		ok = false
	}
	if r.probeBase.sum.P99 > 0 && benchkit.Div(r.probeUnder.sum.P99, r.probeBase.sum.P99) > goalP99Ratio {
		ok = false
	}
	if ok {
		return "meets goals"
	}
	return "MISSES goals"
}

func yesNo(b bool) string {
	if b {
		return "YES"
	}
	return "no"
}

// printBinary writes one binary's table.
func printBinary(w io.Writer, r binResult) {
	fmt.Fprintf(w, "\n== %s: %s, store quota %.0f MiB (%s)\n", r.label, r.bin, mibB(r.quota), r.quotaSrc)
	t := r.throughput
	fmt.Fprintf(w, "no misbehaviour: %d tenants x %d workers: %.1f ops/s (rounds:%s), p50 %s ms, p99 %s ms, errors %d (%s), hub CPU %s ms/op (median %s; rounds:%s)\n\n",
		r.tenants, r.workers, t.opsPerSec(), roundRates(r.rounds), ms(t.sum.P50), ms(t.sum.P99), t.errs, pct(t.errRate()), msPrec(t.cpuPerOp()), msPrec(medianCPU(r.rounds)), roundCPU(r.rounds))
	if len(r.phases) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "attack\tp50 base\tp50 atk\tx\tp99 base\tp99 atk\tx\terr base\terr atk\tops/s base\tops/s atk\tx\trenewals seen\tmissed renew\tfence stops\tprov restarts\tstore max MiB\tof quota\tNOSPACE\tafter clean\tverdict\t")
	for _, p := range r.phases {
		b, u := p.base, p.under
		lease := []any{"-", "-", "-", "-"}
		if p.lease.watched {
			lease = []any{p.lease.seen, p.lease.missed, p.lease.fenceStops, p.lease.restarts}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%.1f\t%s\t%v\t%v\t%v\t%v\t%.0f\t%s\t%s\t%s\t%s\t\n",
			p.name, ms(b.sum.P50), ms(u.sum.P50), ratio(b.sum.P50, u.sum.P50),
			ms(b.sum.P99), ms(u.sum.P99), ratio(b.sum.P99, u.sum.P99),
			pct(b.errRate()), pct(u.errRate()), b.opsPerSec(), u.opsPerSec(), ratioF(b.opsPerSec(), u.opsPerSec()),
			lease[0], lease[1], lease[2], lease[3],
			mibB(p.store.maxDB), pct(float64(p.store.maxDB)/float64(max(p.store.quota, 1))), yesNo(p.store.nospace), yesNo(p.nospaceAfterCleanup), verdict(p))
	}
	tw.Flush()
	fmt.Fprintln(w, "(victim: steady create/get/list/update/delete of small ConfigMaps in its home; latencies in ms per operation; err = failed share)")
	for _, p := range r.phases {
		fmt.Fprintf(w, "%s %s\n", p.name, p.title)
		if p.probe() {
			fmt.Fprintf(w, "   %s: base p50 %s ms p99 %s ms (n=%d, err %d); under attack p50 %s ms p99 %s ms (n=%d, err %d); p99 %s\n",
				p.probeName, ms(p.probeBase.sum.P50), ms(p.probeBase.sum.P99), p.probeBase.sum.N, p.probeBase.errs,
				ms(p.probeUnder.sum.P50), ms(p.probeUnder.sum.P99), p.probeUnder.sum.N, p.probeUnder.errs, ratio(p.probeBase.sum.P99, p.probeUnder.sum.P99))
		}
		fmt.Fprintf(w, "   attacker: %s\n", p.detail)
		fmt.Fprintf(w, "   hub: RSS %.0f MiB under attack, %.0f MiB after cleanup; %d fds under attack; provider (re)starts by the lease gate %d\n",
			float64(p.rssUnder)/1024, float64(p.rssAfter)/1024, p.fdsUnder, p.lease.starts)
		if len(p.base.sample) > 0 {
			fmt.Fprintf(w, "   victim errors at baseline: %s\n", shortErrors(p.base.sample))
		}
		if len(p.under.sample) > 0 {
			fmt.Fprintf(w, "   victim errors under attack: %s\n", shortErrors(p.under.sample))
		}
		if len(p.probeUnder.sample) > 0 {
			fmt.Fprintf(w, "   probe errors under attack: %s\n", shortErrors(p.probeUnder.sample))
		}
	}
}

// msPrec formats a small duration in ms with three decimals.
func msPrec(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", benchkit.Ms(d))
}

// medianCPU is the median of the rounds' CPU time per operation: one
// round that met a burst of others' load moves it less than the mean.
func medianCPU(rounds []loadStats) time.Duration {
	var v []time.Duration
	for _, r := range rounds {
		if c := r.cpuPerOp(); c > 0 {
			v = append(v, c)
		}
	}
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func roundCPU(rounds []loadStats) string {
	var b strings.Builder
	for _, r := range rounds {
		fmt.Fprintf(&b, " %s", msPrec(r.cpuPerOp()))
	}
	return b.String()
}

func roundRates(rounds []loadStats) string {
	var b strings.Builder
	for _, r := range rounds {
		fmt.Fprintf(&b, " %.0f", r.opsPerSec())
	}
	return b.String()
}

func (p phaseResult) probe() bool { return p.probeName != "" }

// printComparison puts two binaries' figures side by side.
func printComparison(w io.Writer, before, after binResult) {
	fmt.Fprintf(w, "\n== before (%s) vs after (%s), one run\n", before.bin, after.bin)
	bt, at := before.throughput.opsPerSec(), after.throughput.opsPerSec()
	fmt.Fprintf(w, "no-misbehaviour throughput: before %.1f ops/s, after %.1f ops/s, cost of limits %s (goal <= %s); hub CPU before %s ms/op, after %s ms/op\n\n",
		bt, at, pct(overhead(bt, at)), pct(goalOverhead), msPrec(before.throughput.cpuPerOp()), msPrec(after.throughput.cpuPerOp()))
	if len(after.phases) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "attack\tp99 x before\tp99 x after\terr atk before\terr atk after\tprobe p99 x before\tprobe p99 x after\tmissed before\tmissed after\tNOSPACE before\tNOSPACE after\tverdict before\tverdict after\t")
	idx := map[string]phaseResult{}
	for _, p := range before.phases {
		idx[p.name] = p
	}
	for _, a := range after.phases {
		b, ok := idx[a.name]
		if !ok {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t\n", a.name,
			ratio(b.base.sum.P99, b.under.sum.P99), ratio(a.base.sum.P99, a.under.sum.P99),
			pct(b.under.errRate()), pct(a.under.errRate()),
			ratio(b.probeBase.sum.P99, b.probeUnder.sum.P99), ratio(a.probeBase.sum.P99, a.probeUnder.sum.P99),
			b.lease.missed, a.lease.missed,
			yesNo(b.store.nospace || b.nospaceAfterCleanup), yesNo(a.store.nospace || a.nospaceAfterCleanup),
			verdict(b), verdict(a))
	}
	tw.Flush()
}

// printCostOfLimits puts each binary's throughput against the hub without
// limits (-off-bin) measured in the same alternating rounds.
func printCostOfLimits(w io.Writer, off binResult, others []binResult) {
	ot, oc, om := off.throughput.opsPerSec(), off.throughput.cpuPerOp(), medianCPU(off.rounds)
	fmt.Fprintf(w, "\n== cost of limits against %s (%s, %.1f ops/s, hub CPU %s ms/op, median %s), one run\n", off.label, off.bin, ot, msPrec(oc), msPrec(om))
	for _, r := range others {
		t, c, m := r.throughput.opsPerSec(), r.throughput.cpuPerOp(), medianCPU(r.rounds)
		fmt.Fprintf(w, "%s (%s): %.1f ops/s, on/off %.3f, cost of limits %s (goal <= %s); hub CPU %s ms/op, on/off %.3f; median round %s ms/op, on/off %.3f\n",
			r.label, r.bin, t, ratioValue(ot, t), pct(overhead(ot, t)), pct(goalOverhead), msPrec(c), ratioValue(float64(oc), float64(c)),
			msPrec(m), ratioValue(float64(om), float64(m)))
	}
}

// ratioValue is after/before, 0 without a base.
func ratioValue(before, after float64) float64 {
	if before <= 0 {
		return 0
	}
	return after / before
}
