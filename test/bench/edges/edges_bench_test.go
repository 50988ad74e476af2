package edgesbench

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wharfhub/wharf/test/bench/benchkit"
	"github.com/wharfhub/wharf/test/kube"
	"github.com/wharfhub/wharf/test/sshd"
)

var (
	flagEdges    = flag.Int("edges", 1000, "simulated edges in the idle fleet")
	flagIdle     = flag.Duration("idle", 60*time.Second, "idle window for CPU and etcd writes, tunnels up")
	flagBaseline = flag.Duration("baseline", 20*time.Second, "idle window with the edges joined and no tunnel up")
	flagRequests = flag.Int("requests", 300, "GETs each way in the latency comparison")
	flagSSHMB    = flag.Int("ssh-mb", 100, "MB read with cat in the SSH comparison")
	flagSSHRuns  = flag.Int("ssh-runs", 3, "runs each way in the SSH comparison")
)

// BenchmarkEdges runs the three parts once (use -benchtime=1x) and prints
// the table; see the package doc. It needs WHARF_BENCH_EDGES=1 and the
// binaries of make build.
func BenchmarkEdges(b *testing.B) {
	if os.Getenv("WHARF_BENCH_EDGES") != "1" {
		b.Skip("set WHARF_BENCH_EDGES=1 (make bench does) to run the edges benchmark")
	}
	binDir := os.Getenv("WHARF_BIN_DIR")
	if binDir == "" {
		root, err := kube.RepoRoot()
		if err != nil {
			b.Fatal(err)
		}
		binDir = filepath.Join(root, "bin")
	}
	for b.Loop() {
		runAll(b, binDir)
	}
}

func runAll(b *testing.B, binDir string) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	work := b.TempDir()

	benchkit.Progress("starting the edge cluster (test/kube) and sshd (test/sshd)")
	kc := kube.Start(b, kube.Options{})
	sd := sshd.Start(b)
	e, err := startEnv(ctx, binDir)
	if err != nil {
		b.Fatal(err)
	}
	defer e.stop()

	failed := map[string]string{}
	lat, err := runLatency(ctx, e, kc, work, *flagRequests)
	if err != nil {
		failed["latency"] = err.Error()
	}
	ssh, err := runSSH(ctx, e, sd, work, *flagSSHMB, *flagSSHRuns)
	if err != nil {
		failed["ssh"] = err.Error()
	}
	fleet, err := runFleet(ctx, e, *flagEdges, *flagIdle, *flagBaseline)
	if err != nil {
		failed["fleet"] = e.hub.Annotate(err).Error()
	}
	Report(os.Stdout, fleet, lat, ssh, failed)
	os.Stdout.WriteString("total edges benchmark time: " + time.Since(start).Round(time.Second).String() + "\n")
	for part, why := range failed {
		b.Errorf("%s part failed: %s", part, why)
	}
}
