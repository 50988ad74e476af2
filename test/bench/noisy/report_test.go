package main

import (
	"bufio"
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/test/bench/benchkit"
)

// These tests exercise the report code without starting a hub: make test
// compiles the command and checks its arithmetic; the load itself runs
// only under make bench-noisy.

func TestMissedRenewals(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(secs ...float64) []time.Time {
		var out []time.Time
		for _, s := range secs {
			out = append(out, t0.Add(time.Duration(s*float64(time.Second))))
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		renews   []time.Time
		from, to float64
		want     int
	}{
		{"steady", at(0, 1.02, 2.05, 3.07, 4.1), 0, 4.5, 0},
		{"slow but in time", at(0, 1.9, 3.8), 0, 4, 0},
		{"one gap of 3.5 s misses two", at(0, 1, 4.5, 5.5), 0, 6, 2},
		{"gap before the window is not counted", at(0, 5, 6, 7), 5.5, 7.5, 0},
		{"silence to the end of the window", at(0, 1), 0, 5, 3},
		{"gap straddling the window start counts from the start", at(0, 10), 6, 10.5, 3},
		{"no renewals at all", nil, 0, 5, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from := t0.Add(time.Duration(tc.from * float64(time.Second)))
			to := t0.Add(time.Duration(tc.to * float64(time.Second)))
			if got := missedRenewals(tc.renews, from, to, time.Second); got != tc.want {
				t.Errorf("missedRenewals = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestMetricValue(t *testing.T) {
	text := `# HELP wharf_provider_restarts_total Times a provider plugin was relaunched.
# TYPE wharf_provider_restarts_total counter
wharf_provider_restarts_total{provider="edges"} 3
wharf_provider_restarts_total{provider="edges2"} 9
`
	for _, tc := range []struct {
		name string
		want int
	}{
		{`wharf_provider_restarts_total{provider="edges"}`, 3},
		{`wharf_provider_restarts_total{provider="edges2"}`, 9},
		{`wharf_provider_restarts_total{provider="other"}`, 0},
	} {
		if got := metricValue(bufio.NewScanner(strings.NewReader(text)), tc.name); got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestRatiosAndOverhead(t *testing.T) {
	for _, tc := range []struct {
		base, under time.Duration
		want        string
	}{
		{10 * time.Millisecond, 25 * time.Millisecond, "2.50x"},
		{0, time.Second, "-"},
		{time.Second, 0, "-"},
	} {
		if got := ratio(tc.base, tc.under); got != tc.want {
			t.Errorf("ratio(%s, %s) = %q, want %q", tc.base, tc.under, got, tc.want)
		}
	}
	if got := ratioF(40, 10); got != "0.25x" {
		t.Errorf("ratioF = %q", got)
	}
	if got := overhead(100, 96); got < 0.0399 || got > 0.0401 {
		t.Errorf("overhead(100, 96) = %v, want 0.04", got)
	}
	if got := overhead(0, 5); got != 0 {
		t.Errorf("overhead with no baseline = %v, want 0", got)
	}
}

// stats builds loadStats from latencies in ms and an error count.
func stats(errs int, latMS ...int) loadStats {
	var r benchkit.Recorder
	for _, l := range latMS {
		r.Add(time.Duration(l) * time.Millisecond)
	}
	return loadStats{sum: r.Summarize(), errs: errs, dur: time.Second}
}

func TestVerdictAndErrRate(t *testing.T) {
	good := phaseResult{name: "B5", base: stats(0, 10, 10, 20), under: stats(0, 10, 15, 30)}
	if v := verdict(good); v != "meets goals" {
		t.Errorf("p99 1.5x, no errors: %s", v)
	}
	for name, mod := range map[string]func(*phaseResult){
		"p99 over 2x":    func(r *phaseResult) { r.under = stats(0, 10, 10, 90) },
		"errors":         func(r *phaseResult) { r.under = stats(1, 10, 10, 20) },
		"missed renewal": func(r *phaseResult) { r.lease = leaseStats{watched: true, missed: 1} },
		"nospace":        func(r *phaseResult) { r.store.nospace = true },
		"alarm stays":    func(r *phaseResult) { r.nospaceAfterCleanup = true },
		"slow probe p99": func(r *phaseResult) { r.probeName, r.probeBase, r.probeUnder = "gc", stats(0, 100), stats(0, 5000) },
	} {
		r := good
		mod(&r)
		if v := verdict(r); v != "MISSES goals" {
			t.Errorf("%s: verdict %q", name, v)
		}
	}
	if got := stats(1, 10, 10, 10).errRate(); got != 0.25 {
		t.Errorf("errRate = %v, want 0.25", got)
	}
}

func TestReport(t *testing.T) {
	phase := phaseResult{
		name: "B7", title: "orphans", detail: "300/300 orphans",
		base: stats(0, 5, 6, 7), under: stats(2, 6, 9, 40),
		probeName: "victim GC", probeBase: stats(0, 100, 120), probeUnder: stats(0, 900, 1200),
		lease: leaseStats{watched: true, missed: 4, fenceStops: 1, restarts: 0},
		store: storeStats{maxDB: 64 << 20, quota: 256 << 20},
	}
	phase.under.sample = []string{"database space exceeded"}
	before := binResult{label: "before", bin: "old", quota: defaultEtcdQuota, throughput: stats(0, 5, 5), rounds: []loadStats{stats(0, 5, 5), stats(0, 5, 5, 5)}, tenants: 3, workers: 2, phases: []phaseResult{phase}}
	after := before
	before.quotaSrc = "etcd default; the binary has no --etcd-quota-backend-bytes"
	after.label, after.bin, after.quotaSrc, after.quota = "after", "new", "--etcd-quota-backend-bytes", 256<<20
	var buf bytes.Buffer
	printBinary(&buf, before)
	printBinary(&buf, after)
	printComparison(&buf, before, after)
	out := buf.String()
	for _, want := range []string{
		"store quota 2048 MiB (etcd default; the binary has no", "store quota 256 MiB (--etcd-quota-backend-bytes)",
		"no misbehaviour: 3 tenants x 2 workers", "B7", "5.71x", // p99 40 ms / 7 ms
		"victim GC: base p50 100.0 ms", "10.00x", "database space exceeded", "25.0%",
		"MISSES goals", "cost of limits 0.0%", "(rounds: 2 3)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// TestCostOfLimits: with -off-bin and -attacks none, each binary's
// throughput is put against the hub without limits, and no attack table is
// printed.
func TestCostOfLimits(t *testing.T) {
	off := binResult{label: offLabel, bin: "nolimits", throughput: stats(0, 5, 5, 5, 5), rounds: []loadStats{stats(0, 5, 5)}, tenants: 3, workers: 2}
	off.throughput.cpu = 8 * time.Millisecond // 2 ms/op
	off.rounds[0].cpu = 4 * time.Millisecond  // 2 ms/op
	after := off
	after.label, after.bin = "after", "new"
	before := off
	before.label, before.bin, before.throughput = "before", "old", stats(0, 5, 5, 5) // 3 ops/s against 4
	before.throughput.cpu = 9 * time.Millisecond                                     // 3 ms/op
	// Rounds of 2 ops each at 2, 3 and 40 ms/op: the median is 3.
	before.rounds = []loadStats{stats(0, 5, 5), stats(0, 5, 5), stats(0, 5, 5)}
	for i, c := range []time.Duration{2, 3, 40} {
		before.rounds[i].cpu = 2 * c * time.Millisecond
	}
	var buf bytes.Buffer
	printBinary(&buf, before)
	printCostOfLimits(&buf, off, []binResult{before, after})
	printComparison(&buf, before, after)
	out := buf.String()
	for _, want := range []string{
		"cost of limits against off (nolimits, 4.0 ops/s, hub CPU 2.000 ms/op, median 2.000)",
		"hub CPU 3.000 ms/op (median 3.000; rounds: 2.000 3.000 40.000)",
		"before (old): 3.0 ops/s, on/off 0.750, cost of limits 25.0% (goal <= 5.0%); hub CPU 3.000 ms/op, on/off 1.500; median round 3.000 ms/op, on/off 1.500",
		"after (new): 4.0 ops/s, on/off 1.000, cost of limits 0.0% (goal <= 5.0%); hub CPU 2.000 ms/op, on/off 1.000; median round 2.000 ms/op, on/off 1.000",
		"before 3.0 ops/s, after 4.0 ops/s, cost of limits -33.3%",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if got, err := processCPU(os.Getpid()); err != nil || got < 0 {
		t.Errorf("processCPU(self) = %v, %v", got, err)
	}
	if strings.Contains(out, "attack\t") || strings.Contains(out, "verdict") {
		t.Errorf("attack table printed without attacks:\n%s", out)
	}
}

func TestScales(t *testing.T) {
	var p params
	var a, b int
	p.scales = []scale{{name: "a", full: 100, quick: 10, value: &a}, {name: "b", full: 5, quick: 1, value: &b}}
	b = 7 // set on the command line
	p.quick, p.baseline, p.attackTime, p.throughputFor = true, time.Minute, time.Minute, time.Minute
	p.applyScales()
	if a != 10 || b != 7 {
		t.Errorf("quick scales: a=%d b=%d, want 10 7", a, b)
	}
	if p.attackTime > 12*time.Second || p.baseline > 5*time.Second {
		t.Errorf("quick times: %s %s", p.attackTime, p.baseline)
	}
	p.attacks = "b1, B5,"
	if got := p.attackList(); len(got) != 2 || got[0] != "B1" || got[1] != "B5" {
		t.Errorf("attackList = %q", got)
	}
	for _, none := range []string{"", "none", " None "} {
		p.attacks = none
		if got := p.attackList(); len(got) != 0 {
			t.Errorf("attackList(%q) = %q, want none (throughput rounds only)", none, got)
		}
	}
}

func TestQuotaArg(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int64
		ok   bool
	}{
		{[]string{"--v=2", "--etcd-quota-backend-bytes=268435456"}, 268435456, true},
		{[]string{"--etcd-quota-backend-bytes", "1000"}, 1000, true},
		{[]string{"--etcd-quota-backend-bytes"}, 0, false},
		{nil, 0, false},
	} {
		got, ok := quotaArg(tc.args)
		if got != tc.want || ok != tc.ok {
			t.Errorf("quotaArg(%q) = %d %v, want %d %v", tc.args, got, ok, tc.want, tc.ok)
		}
	}
}
