package revdialbench

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
)

// row is what one system measured.
type row struct {
	name   string
	lat    latency // paced dials
	burst  latency // back-to-back dials
	stats  string
	mbps   float64
	conc   concurrency
	idle   float64 // bytes per idle tunnel; 0 when not measured
	errors []string
}

// pace separates the dials of the latency scenario: 5 ms is long enough for
// a dial's background work (a warm-pool refill, a closing connection) to
// finish, so each sample is an isolated new connection.
const pace = 5 * time.Millisecond

// BenchmarkCompare runs every scenario on every system in one process and
// prints a table with ratios. It ignores b.N: each scenario has a fixed
// size, so run it with -benchtime=1x.
func BenchmarkCompare(b *testing.B) {
	samples := int(envInt("WHARF_BENCH_SAMPLES", 300))
	total := envInt("WHARF_BENCH_BYTES", 1<<30)
	conns := int(envInt("WHARF_BENCH_CONNS", 1000))
	tunnels := int(envInt("WHARF_BENCH_TUNNELS", 1000))

	var rows []row
	for _, sys := range systems() {
		r := row{name: sys.name}
		b.Run(sys.name, func(b *testing.B) {
			h, stop := withAgent(b, sys)
			r.lat = measureLatency(h, samples, pace)
			if h.stats != nil {
				r.stats = "after paced dials: " + h.stats()
			}
			r.burst = measureLatency(h, samples, 0)
			if h.stats != nil {
				r.stats += "; after back-to-back: " + h.stats()
			}
			if sys.name != "wharf-warm" { // the pool does not touch the data path
				var err error
				if r.mbps, err = measureThroughput(h, total); err != nil {
					r.errors = append(r.errors, "throughput: "+err.Error())
				}
			}
			r.conc = measureConcurrentEcho(h, conns)
			if r.conc.first != nil {
				r.errors = append(r.errors, "echo: "+r.conc.first.Error())
			}
			if h.stats != nil {
				r.stats += "; after echo: " + h.stats()
			}
			stop()
			if sys.name != "wharf-warm" { // idle tunnels keep warm pickups: a different trade
				var err error
				if r.idle, err = measureIdleMemory(b, sys, tunnels); err != nil {
					r.errors = append(r.errors, "idle: "+err.Error())
				}
			}
			b.ReportMetric(float64(r.lat.p50.Microseconds()), "p50-µs")
			b.ReportMetric(float64(r.lat.p99.Microseconds()), "p99-µs")
			b.ReportMetric(float64(r.burst.p50.Microseconds()), "b2b-p50-µs")
			b.ReportMetric(r.mbps, "MB/s")
			b.ReportMetric(float64(r.conc.errors), "echo-errors")
			b.ReportMetric(float64(r.conc.total.Milliseconds()), "echo-ms")
			b.ReportMetric(r.idle, "B/idle-tunnel")
		})
		rows = append(rows, r)
	}
	printTable(os.Stdout, rows, samples, total, conns, tunnels)
}

func printTable(f *os.File, rows []row, samples int, total int64, conns, tunnels int) {
	fmt.Fprintf(f, "\nrevdial comparison: %d dials for latency (paced %v, then back-to-back), %d MiB single stream, %d concurrent echoes, %d idle tunnels\n\n",
		samples, pace, total>>20, conns, tunnels)
	tw := tabwriter.NewWriter(f, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\tp50 dial→first byte\tp99\tp50 back-to-back\tp99 back-to-back\tdial errors\tthroughput MB/s\techo errors\techo total\thub B/idle tunnel\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%v\t%v\t%v\t%v\t%d\t%s\t%d\t%v\t%s\t\n", r.name,
			r.lat.p50.Round(time.Microsecond), r.lat.p99.Round(time.Microsecond),
			r.burst.p50.Round(time.Microsecond), r.burst.p99.Round(time.Microsecond), r.lat.errors+r.burst.errors,
			orDash(r.mbps, "%.0f"), r.conc.errors, r.conc.total.Round(time.Millisecond), orDash(r.idle, "%.0f"))
	}
	tw.Flush()

	by := map[string]row{}
	for _, r := range rows {
		by[r.name] = r
	}
	w, ww := by["wharf"], by["wharf-warm"]
	fmt.Fprintf(f, "\nratios (wharf ÷ peer; for latency, time and memory lower is better, for throughput higher is better)\n\n")
	tw = tabwriter.NewWriter(f, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "peer\tp50 (warm)\tp50 (cold)\tp99 (warm)\tp50 b2b (warm)\tthroughput\techo total\tidle memory\t")
	for _, p := range []string{"x/build-v2", "remotedialer", "raw-tls"} {
		r := by[p]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", p,
			ratio(float64(ww.lat.p50), float64(r.lat.p50)), ratio(float64(w.lat.p50), float64(r.lat.p50)),
			ratio(float64(ww.lat.p99), float64(r.lat.p99)), ratio(float64(ww.burst.p50), float64(r.burst.p50)), ratio(w.mbps, r.mbps),
			ratio(float64(w.conc.total), float64(r.conc.total)), ratio(w.idle, r.idle))
	}
	tw.Flush()

	v2, raw := by["x/build-v2"], by["raw-tls"]
	fmt.Fprintf(f, "\ntargets\n")
	target(f, "new-connection p50 with warm pickups <= 0.5x x/build-v2", float64(ww.lat.p50)/float64(v2.lat.p50), 0.5, true)
	target(f, "throughput >= 0.5x raw TLS", w.mbps/raw.mbps, 0.5, false)
	fmt.Fprintf(f, "  %-58s %d errors (wharf), %d (wharf-warm)  %s\n", "zero errors at 1,000 connections", w.conc.errors, ww.conc.errors,
		verdict(w.conc.errors == 0 && ww.conc.errors == 0))
	fmt.Fprintf(f, "  %-58s %.1f KiB  %s\n", "<= 64 KiB per idle tunnel", w.idle/1024, verdict(w.idle > 0 && w.idle <= 64<<10))
	for _, r := range rows {
		if r.stats != "" {
			fmt.Fprintf(f, "  %s counters: %s\n", r.name, r.stats)
		}
	}
	for _, r := range rows {
		if len(r.errors) > 0 {
			fmt.Fprintf(f, "\n%s errors: %s\n", r.name, strings.Join(r.errors, "; "))
		}
	}
	fmt.Fprintln(f)
}

func orDash(v float64, format string) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf(format, v)
}

func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

func target(f *os.File, what string, got, want float64, atMost bool) {
	ok := got >= want
	if atMost {
		ok = got <= want
	}
	fmt.Fprintf(f, "  %-58s %.2fx  %s\n", what, got, verdict(ok && got > 0))
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}
