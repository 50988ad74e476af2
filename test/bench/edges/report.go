package edgesbench

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/wharfhub/wharf/providers/edges"
)

// KeyCount is how often one etcd key was written.
type KeyCount struct {
	Key string
	N   int
}

func sortKeyCounts(s []KeyCount) {
	slices.SortFunc(s, func(a, b KeyCount) int {
		if c := cmp.Compare(b.N, a.N); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
}

// Fleet is the result of the idle-fleet part.
type Fleet struct {
	Edges, Joined, Connected, Ready int
	JoinTime                        time.Duration    // creating and joining the Joined edges
	ConnectTime                     time.Duration    // from the first control dial to all connected
	ReadyTime                       time.Duration    // from all connected to all Ready (or giving up)
	JoinSteps                       [3]time.Duration // mean time of create, join-token, join per edge
	QuietWait                       time.Duration    // waiting for the joins' status writes to end
	// Provider VmRSS: before any Edge existed, with every Edge created and
	// joined but no tunnel up, and with every tunnel up and idle.
	RSSEmptyKiB, RSSJoinedKiB, RSSConnectedKiB int64
	HubRSSJoinedKiB, HubRSSKiB                 int64 // the hub's VmRSS with no tunnel up and with the fleet connected
	// Baseline: joined, no tunnel up; Loaded: every tunnel up. Both idle.
	Baseline, Loaded Window
}

// Window is what the hub and the provider did during an idle window.
type Window struct {
	D                   time.Duration
	HubCPU, ProviderCPU time.Duration
	Writes              map[string]int // etcd writes by class (Classify)
	TopKeys             []KeyCount
	WatchErr            error
	StatusWrites        int // the provider's wharf_edges_status_writes_total during D
	ConnectedGauge      int // wharf_edges_connected at the end
	MetricsErr          error
}

func (w Window) cpuPct(d time.Duration) float64 {
	if w.D <= 0 {
		return 0
	}
	return 100 * d.Seconds() / w.D.Seconds()
}

// Latency is the result of the GET comparison.
type Latency struct {
	Path              string
	N                 int
	Direct, Edge      Dist
	FirstAfterConnect time.Duration // the first GET once the edge is Ready
	AgentStartToReady time.Duration // agent start to status Ready with a URL
	FirstDirect       time.Duration // the first GET straight, new connection
	TunnelDials       int           // tunnel connections the measured GETs opened
	DialMean          time.Duration // their mean dial time (conn-ready to pickup)
	MetricsErr        error
}

// Dist is a latency distribution's median and 90th percentile.
type Dist struct{ P50, P90 time.Duration }

// DistOf returns the nearest-rank median and p90 of d (unsorted, not empty).
func DistOf(d []time.Duration) Dist {
	s := slices.Clone(d)
	slices.Sort(s)
	return Dist{P50: percentile(s, 50), P90: percentile(s, 90)}
}

func percentile(sorted []time.Duration, p int) time.Duration {
	rank := (p*len(sorted) + 99) / 100
	return sorted[max(rank, 1)-1]
}

// SSH is the result of the throughput comparison.
type SSH struct {
	Bytes          int64
	Direct, Tunnel []time.Duration // one per run
}

// MBps is bytes over the median of runs, in MB/s (10^6 bytes),
// or 0 without runs.
func MBps(bytes int64, runs []time.Duration) float64 {
	if len(runs) == 0 {
		return 0
	}
	s := slices.Clone(runs)
	slices.Sort(s)
	med := s[(len(s)-1)/2]
	if med <= 0 {
		return 0
	}
	return float64(bytes) / 1e6 / med.Seconds()
}

func ratio(a, b float64) string {
	if b == 0 || a == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// perMinute scales n writes over d to a minute.
func perMinute(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) * float64(time.Minute) / float64(d)
}

// Report prints the table. Parts that did not run are nil; skipped holds
// why, by part name.
func Report(w io.Writer, f *Fleet, l *Latency, s *SSH, skipped map[string]string) {
	fmt.Fprintf(w, "\nedges benchmark (ratios are printed, never asserted)\n")
	fmt.Fprintf(w, "%-52s %14s %14s %10s  %s\n", "measure", "edge", "baseline", "ratio", "goal")
	row := func(name, a, b, r, goal string) {
		fmt.Fprintf(w, "%-52s %14s %14s %10s  %s\n", name, a, b, r, goal)
	}
	if f != nil {
		fmt.Fprintf(w, "-- 1. idle fleet: %d edges asked, %d created and joined in %s (%.1f joins/s), %d tunnels up in %s, %d Ready %s later; idle windows %s (tunnels up) and %s (baseline)\n",
			f.Edges, f.Joined, f.JoinTime.Round(time.Second), float64(f.Joined)/max(f.JoinTime.Seconds(), 1e-9),
			f.Connected, f.ConnectTime.Round(time.Millisecond), f.Ready, f.ReadyTime.Round(time.Second), f.Loaded.D, f.Baseline.D)
		fmt.Fprintf(w, "   per edge (16 in parallel): create %.0f ms, join-token %.0f ms, join %.0f ms; then %s until the Edges were quiet\n",
			ms(f.JoinSteps[0]), ms(f.JoinSteps[1]), ms(f.JoinSteps[2]), f.QuietWait.Round(time.Second))
		if f.Joined < f.Edges {
			fmt.Fprintf(w, "   (only %d of %d edges joined within the bench's join budget: the per-edge numbers are over %d)\n", f.Joined, f.Edges, f.Joined)
		}
		n := float64(max(f.Connected, 1))
		row("provider RSS per idle edge, tunnel only (KiB)", fmt.Sprintf("%.1f", float64(f.RSSConnectedKiB-f.RSSJoinedKiB)/n), "", "", "")
		row("provider RSS per edge, object+credential+tunnel (KiB)", fmt.Sprintf("%.1f", float64(f.RSSConnectedKiB-f.RSSEmptyKiB)/n), "", "", "")
		row("provider RSS: empty / joined / connected (MiB)", fmt.Sprintf("%d/%d/%d", f.RSSEmptyKiB/1024, f.RSSJoinedKiB/1024, f.RSSConnectedKiB/1024), "", "", "")
		row("hub RSS per idle edge, tunnel only (KiB)", fmt.Sprintf("%.1f", float64(f.HubRSSKiB-f.HubRSSJoinedKiB)/n), "", "", "the hub proxies every tunnel")
		row("hub RSS: joined / connected (MiB)", fmt.Sprintf("%d/%d", f.HubRSSJoinedKiB/1024, f.HubRSSKiB/1024), "", "", "")
		b, l := f.Baseline, f.Loaded
		pct := func(v float64) string { return fmt.Sprintf("%.2f%%", v) }
		row("hub CPU while idle (% of one core)", pct(l.cpuPct(l.HubCPU)), pct(b.cpuPct(b.HubCPU)), ratio(l.cpuPct(l.HubCPU), b.cpuPct(b.HubCPU)), "baseline: joined, no tunnel")
		row("provider CPU while idle (% of one core)", pct(l.cpuPct(l.ProviderCPU)), pct(b.cpuPct(b.ProviderCPU)), ratio(l.cpuPct(l.ProviderCPU), b.cpuPct(b.ProviderCPU)), "")
		for _, c := range []string{ClassEdges, ClassWorkspace, ClassHub} {
			goal := ""
			if c != ClassHub {
				goal = "0 (none while nothing changes)"
			}
			row("etcd writes/min: "+c, fmt.Sprintf("%.1f", perMinute(l.Writes[c], l.D)), fmt.Sprintf("%.1f", perMinute(b.Writes[c], b.D)), "", goal)
		}
		if l.MetricsErr == nil {
			row("provider status writes during the window", fmt.Sprintf("%d", l.StatusWrites), fmt.Sprintf("%d", b.StatusWrites), "", "")
			row("wharf_edges_connected at the window's end", fmt.Sprintf("%d", l.ConnectedGauge), fmt.Sprintf("%d", b.ConnectedGauge), "", "")
		} else {
			fmt.Fprintf(w, "   (provider metrics unreadable: %v)\n", l.MetricsErr)
		}
		// The provider checks heartbeats every interval/2, so a rewrite
		// comes between 1 and 1.5 intervals after the last: a window
		// shorter than that can miss every one.
		if l.D < HeartbeatInterval*3/2 {
			fmt.Fprintf(w, "   note: the provider rewrites a connected edge's lastHeartbeatTime every %s to %s (its default),\n"+
				"   which this window can miss: in steady state that is up to %.1f writes/min for %d edges, not seen above\n",
				HeartbeatInterval, HeartbeatInterval*3/2, float64(f.Connected)*float64(time.Minute)/float64(HeartbeatInterval), f.Connected)
		}
		for _, win := range []Window{l, b} {
			if win.WatchErr != nil {
				fmt.Fprintf(w, "   (etcd watch failed, counts are a lower bound: %v)\n", win.WatchErr)
			}
		}
		for _, k := range l.TopKeys {
			fmt.Fprintf(w, "   top written key, tunnels up: %4d  %s\n", k.N, k.Key)
		}
	} else {
		fmt.Fprintf(w, "-- 1. idle fleet: not run: %s\n", skipped["fleet"])
	}
	if l != nil {
		fmt.Fprintf(w, "-- 2. GET %s, %d requests each, interleaved\n", l.Path, l.N)
		row("GET median (ms)", fmt.Sprintf("%.2f", ms(l.Edge.P50)), fmt.Sprintf("%.2f", ms(l.Direct.P50)), ratio(ms(l.Edge.P50), ms(l.Direct.P50)), "<= 1.30x")
		row("GET p90 (ms)", fmt.Sprintf("%.2f", ms(l.Edge.P90)), fmt.Sprintf("%.2f", ms(l.Direct.P90)), ratio(ms(l.Edge.P90), ms(l.Direct.P90)), "<= 1.30x")
		row("first GET, new connection (ms)", fmt.Sprintf("%.2f", ms(l.FirstAfterConnect)), fmt.Sprintf("%.2f", ms(l.FirstDirect)), ratio(ms(l.FirstAfterConnect), ms(l.FirstDirect)), "")
		if l.MetricsErr == nil {
			row("tunnel connections opened by the measured GETs", fmt.Sprintf("%d", l.TunnelDials), fmt.Sprintf("%d GETs", l.N), "", "")
			row("mean tunnel dial, conn-ready to pickup (ms)", fmt.Sprintf("%.2f", ms(l.DialMean)), "", "", "")
		} else {
			fmt.Fprintf(w, "   (provider metrics unreadable: %v)\n", l.MetricsErr)
		}
		row("agent start to edge Ready (ms)", fmt.Sprintf("%.0f", ms(l.AgentStartToReady)), "", "", "")
	} else {
		fmt.Fprintf(w, "-- 2. GET latency: not run: %s\n", skipped["latency"])
	}
	if s != nil {
		fmt.Fprintf(w, "-- 3. SSH: cat of %d MB, median of %d runs each, first byte to last\n", s.Bytes/1e6, len(s.Direct))
		tun, dir := MBps(s.Bytes, s.Tunnel), MBps(s.Bytes, s.Direct)
		row("ssh throughput (MB/s)", fmt.Sprintf("%.1f", tun), fmt.Sprintf("%.1f", dir), ratio(tun, dir), ">= 0.50x")
		each := func(runs []time.Duration) string {
			var parts []string
			for _, d := range runs {
				parts = append(parts, fmt.Sprintf("%.1f", MBps(s.Bytes, []time.Duration{d})))
			}
			return strings.Join(parts, " ")
		}
		fmt.Fprintf(w, "   each run (MB/s, in order): tunnel %s; direct %s\n", each(s.Tunnel), each(s.Direct))
	} else {
		fmt.Fprintf(w, "-- 3. SSH throughput: not run: %s\n", skipped["ssh"])
	}
}

// HeartbeatInterval is the edges provider's default interval of
// lastHeartbeatTime rewrites (providers/edges.DefaultHeartbeatInterval),
// for the report's note on writes a short window cannot see.
var HeartbeatInterval = edges.DefaultHeartbeatInterval
