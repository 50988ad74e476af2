// Command noisy is the noisy-neighbour benchmark of issue 24. It starts a
// real wharf-hub (with its embedded etcd and the replicas: single edges
// provider) on loopback, makes a victim person and an attacker person
// (static tokens, home workspaces), and for each attack B1–B7 and the
// CPU attacks B-A–B-C of the second review (attacks_cpu.go) and the ninth
// review's TLS churn from the hub's own address B-D (attacks_conns.go)
// measures the victim's p50, p99, error rate and throughput for a steady
// mix of small ConfigMap operations in its home, at baseline and under the
// attack, with the ratio. It also prints missed lease renewals of the edges provider,
// the store's size against its quota and whether NOSPACE was reached, and
// the throughput of several well-behaved tenants (the cost of limits when
// nobody misbehaves). With -before-bin both binaries run, one after the
// other on fresh hubs, and the report puts them side by side.
//
// Every attack is bounded in count and time; nothing is asserted: the
// command prints a table and exits 0 unless the hub could not be run.
//
// Usage:
//
//	go run ./test/bench/noisy -bin bin/wharf-hub [-before-bin old/wharf-hub] [-quick] [-attacks B1,B5,B-A]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/test/bench/benchkit"
)

// scale is one bounded size of the benchmark with its full and -quick
// values; an explicitly set flag wins over both.
type scale struct {
	name, usage string
	full, quick int
	value       *int
}

// params are the benchmark's flags; Bin and Timeout are in Command.
type params struct {
	benchkit.Command
	beforeBin string
	// offBin, when set, is a hub without tenant limits: it runs in the
	// throughput rounds only, as the base of every other binary's cost of
	// limits.
	offBin string
	// profileDir, when set, receives a CPU profile of each hub per
	// throughput round (profile.go).
	profileDir string
	// keepLogs, when set, receives each hub's log (<label>-hub.log).
	keepLogs      string
	edgesBin      string
	hubArgs       string
	etcdQuota     int64
	externalEtcd  bool
	quick         bool
	attacks       string
	scales        []scale
	baseline      time.Duration
	attackTime    time.Duration
	throughputFor time.Duration
	// warmup is an unmeasured round of the well-behaved load on each hub
	// before the throughput rounds: a fresh hub's first seconds cost
	// more CPU per operation (caches fill, the heap grows).
	warmup time.Duration
	rounds int

	// Scales, filled from scales after flag.Parse.
	victimWorkers, tenants, tenantWorkers                      int
	fillMB, fillWorkspaces, fillEvents                         int
	listMB, lists, heldWorkspaces, watches, forbidden, orphans int
	cpuWrites, cpuPatches, cpuReads                            int
	// cpuAttackTime bounds each of B-A, B-B and B-C (attacks_cpu.go).
	cpuAttackTime time.Duration
}

func (p *params) registerScales() {
	p.scales = []scale{
		{"victim-workers", "victim's concurrent workers", 2, 2, &p.victimWorkers},
		{"tenants", "well-behaved tenants in the throughput figure", 4, 3, &p.tenants},
		{"tenant-workers", "workers per well-behaved tenant", 2, 2, &p.tenantWorkers},
		{"throughput-rounds", "rounds of the throughput figure, alternating between binaries", 4, 2, &p.rounds},
		{"fill-mb", "B1: at most this many 1 MB ConfigMaps (more than -etcd-quota: filled until refused)", 300, 30, &p.fillMB},
		{"fill-workspaces", "B1: at most this many child workspaces", 150, 30, &p.fillWorkspaces},
		{"fill-events", "B1: at most this many 500 kB Events", 60, 10, &p.fillEvents},
		{"list-mb", "B2/B3: MB of 100 kB ConfigMaps the attacker lists", 20, 5, &p.listMB},
		{"lists", "B2/B3: concurrent lists", 24, 8, &p.lists},
		{"held-workspaces", "B4: deleted child workspaces held by finalizers", 250, 25, &p.heldWorkspaces},
		{"watches", "B5: watches, one connection each", 2000, 200, &p.watches},
		{"forbidden", "B6: concurrent requests to a workspace the attacker may not see", 200, 50, &p.forbidden},
		{"orphans", "B7: ConfigMaps owned by missing owners", 3000, 300, &p.orphans},
		{"cpu-writes", "B-A: concurrent dry-run POSTs of a 60,000-key ConfigMap", 10, 10, &p.cpuWrites},
		{"cpu-patches", "B-B: concurrent dry-run 900 kB merge patches", 8, 8, &p.cpuPatches},
		{"cpu-reads", "B-C: concurrent GETs of OpenAPI and discovery", 40, 40, &p.cpuReads},
	}
	for _, s := range p.scales {
		flag.IntVar(s.value, s.name, 0, fmt.Sprintf("%s (default %d, -quick %d)", s.usage, s.full, s.quick))
	}
}

// applyScales gives every scale flag left at 0 its full or quick value.
func (p *params) applyScales() {
	for _, s := range p.scales {
		if *s.value == 0 {
			*s.value = s.full
			if p.quick {
				*s.value = s.quick
			}
		}
	}
	if p.quick {
		p.baseline = min(p.baseline, 5*time.Second)
		p.attackTime = min(p.attackTime, 12*time.Second)
		p.throughputFor = min(p.throughputFor, 5*time.Second)
		p.cpuAttackTime = min(p.cpuAttackTime, 12*time.Second)
	}
}

func main() {
	p := params{Command: benchkit.Command{Name: "noisy bench"}}
	p.RegisterFlags(60 * time.Minute)
	flag.StringVar(&p.profileDir, "cpuprofile-dir", "", "write a CPU profile of each hub during each throughput round to this directory (<label>-round<n>.pprof; read with go tool pprof)")
	flag.StringVar(&p.keepLogs, "keep-logs", "", "copy each hub's log to this directory (<label>-hub.log) before the hub's temp dir is removed")
	flag.StringVar(&p.beforeBin, "before-bin", "", "optional second wharf-hub binary, run first and reported as \"before\"")
	flag.StringVar(&p.offBin, "off-bin", "", "optional wharf-hub binary without tenant limits (e.g. built before issue 24), reported as \"off\": it runs in the throughput rounds only, and every other binary's cost of limits is measured against it")
	flag.StringVar(&p.edgesBin, "edges-bin", "bin/wharf-provider-edges", "replicas: single provider whose lease renewals are watched (empty: none)")
	flag.StringVar(&p.hubArgs, "hub-args", "", "extra wharf-hub flags, space separated, passed to every binary")
	flag.Int64Var(&p.etcdQuota, "etcd-quota", 256<<20, "store quota in bytes, passed as --etcd-quota-backend-bytes to binaries that know that flag")
	flag.BoolVar(&p.externalEtcd, "external-etcd", false, "run each hub on an etcd of this command's (--etcd-servers) started with -etcd-quota, so a binary without the quota flag meets a small store too")
	flag.BoolVar(&p.quick, "quick", false, "small, short smoke run")
	flag.StringVar(&p.attacks, "attacks", "B1,B2,B4,B5,B6,B7,B-A,B-B,B-C,B-D", "attacks to run (B2 is the B2/B3 list flood; B-A, B-B, B-C are the second review's CPU attacks; B-D the ninth review's TLS churn from the hub's own address); empty or \"none\": the throughput rounds only")
	flag.DurationVar(&p.baseline, "baseline", 10*time.Second, "victim baseline before each attack")
	flag.DurationVar(&p.attackTime, "attack-time", 40*time.Second, "bound of each attack's measured window")
	flag.DurationVar(&p.cpuAttackTime, "cpu-attack-time", 20*time.Second, "bound of each CPU attack (B-A, B-B, B-C), within -attack-time")
	flag.DurationVar(&p.warmup, "throughput-warmup", 5*time.Second, "unmeasured round of the well-behaved load on each hub before the throughput rounds (0: none)")
	flag.DurationVar(&p.throughputFor, "throughput-time", 10*time.Second, "length of one round of the well-behaved throughput measurement")
	p.registerScales()
	flag.Parse()
	p.applyScales()
	// client-go logs every request cut short when a window ends; the
	// report counts errors itself.
	kfs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(kfs)
	_ = kfs.Set("logtostderr", "false")
	_ = kfs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
	p.Main(p.validate, func(ctx context.Context) error { return run(ctx, p) })
}

func (p params) validate() error {
	for _, s := range p.scales {
		if *s.value < 1 {
			return fmt.Errorf("-%s must be at least 1", s.name)
		}
	}
	if p.baseline <= 0 || p.attackTime <= 0 || p.throughputFor <= 0 || p.cpuAttackTime <= 0 {
		return errors.New("-baseline, -attack-time, -cpu-attack-time and -throughput-time must be positive")
	}
	for _, a := range p.attackList() {
		if _, ok := attackByName[a]; !ok {
			return fmt.Errorf("-attacks: unknown attack %q", a)
		}
	}
	return nil
}

func (p params) attackList() []string {
	var out []string
	for _, a := range strings.Split(p.attacks, ",") {
		if a = strings.ToUpper(strings.TrimSpace(a)); a != "" && a != "NONE" {
			out = append(out, a)
		}
	}
	return out
}

// offLabel names the -off-bin hub in the report.
const offLabel = "off"

// labelledBin is a binary under test and its name in the report.
type labelledBin struct{ label, bin string }

func run(ctx context.Context, p params) error {
	fmt.Printf("wharf noisy-neighbour benchmark: bin=%s before-bin=%q off-bin=%q quick=%v attacks=%s baseline=%s attack-time=%s throughput=%dx%s GOMAXPROCS=%d\n",
		p.Bin, p.beforeBin, p.offBin, p.quick, p.attacks, p.baseline, p.attackTime, p.rounds, p.throughputFor, runtime.GOMAXPROCS(0))
	bins := []labelledBin{{"hub", p.Bin}}
	if p.beforeBin != "" {
		bins = []labelledBin{{"before", p.beforeBin}, {"after", p.Bin}}
	}
	if p.offBin != "" {
		bins = append([]labelledBin{{offLabel, p.offBin}}, bins...)
	}
	for _, b := range bins {
		if _, err := os.Stat(b.bin); err != nil {
			return fmt.Errorf("%s binary: %w", b.label, err)
		}
	}
	envs, err := startAll(ctx, p, bins)
	if err != nil {
		return err
	}
	stopped := make([]bool, len(envs))
	defer func() {
		for i, e := range envs {
			if !stopped[i] {
				e.stop()
			}
		}
	}()
	res := make([]binResult, len(bins))
	for i, b := range bins {
		res[i] = binResult{label: b.label, bin: b.bin, quota: envs[i].quota, quotaSrc: envs[i].quotaSrc, tenants: p.tenants, workers: p.tenantWorkers}
	}
	measureThroughput(ctx, p, envs, res)
	// Attacks run against one hub at a time; each hub is stopped after its
	// attacks, so the next one has the machine to itself. The hub without
	// limits is only the throughput base.
	for i, e := range envs {
		if res[i].label == offLabel {
			e.stop()
			stopped[i] = true
			printBinary(os.Stdout, res[i])
			continue
		}
		if err := runAttacks(ctx, e, &res[i]); err != nil {
			return fmt.Errorf("%s (%s): %w", res[i].label, res[i].bin, err)
		}
		benchkit.Progress("%s: stopping hub", res[i].label)
		keepLog(p.keepLogs, res[i].label, e.h)
		e.stop()
		stopped[i] = true
		printBinary(os.Stdout, res[i])
	}
	if p.offBin != "" {
		printCostOfLimits(os.Stdout, res[0], res[1:])
		res = res[1:]
	}
	if len(res) == 2 {
		printComparison(os.Stdout, res[0], res[1])
	}
	return nil
}

// keepLog copies h's log to dir/<label>-hub.log when dir is set.
func keepLog(dir, label string, h *benchkit.Hub) {
	if dir == "" {
		return
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(h.DataDir()), "hub.log"))
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, label+"-hub.log"), b, 0o600)
	}
	if err != nil {
		benchkit.Progress("%s: keeping the hub log: %v", label, err)
	}
}
