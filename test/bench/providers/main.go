// Command providers benchmarks the hub's backend proxy against nginx and
// against no proxy at all. The same upstream handler (package upstream, a
// fixed small answer) runs in the same kind of process behind each target:
//
//   - hub: https to wharf-hub, /services/providers/bench/ (authentication,
//     workspace check, identity headers), to a real plugin process;
//   - nginx: https to nginx (Debian package, TLS with the hub's certificate)
//     reverse-proxying to the handler's unix socket with a keep-alive pool;
//   - direct: plain HTTP to the handler's unix socket;
//   - go-rp, for comparison only: https to a bare httputil.ReverseProxy
//     (same TLS certificate, same socket), which separates the cost of Go's
//     net/http from the hub's own work.
//
// Server CPU per request is that of the serving processes (hub with its
// plugin; nginx with its workers and the handler; the handler alone), from
// /proc, so the table also says where the time goes on a busy machine.
//
// One Go load generator drives each in turn with the same number of
// keep-alive connections (64 by default), one request in flight on each,
// for a fixed time after a warm-up. It prints requests per second, p50 and
// p99 latency, hub/nginx throughput and the p99 each proxy adds over
// direct. Nothing is asserted: the numbers depend on the machine.
//
// Usage:
//
//	go run ./test/bench/providers -bin bin/wharf-hub [-conns 64] [-duration 10s]
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/wharfhub/wharf/test/bench/benchkit"
	"github.com/wharfhub/wharf/test/bench/providers/upstream"
)

var bodyLen = len(upstream.Body)

type params struct {
	benchkit.Command
	conns    int
	warmup   time.Duration
	duration time.Duration
	rounds   int
}

func main() {
	p := params{Command: benchkit.Command{Name: "providers bench"}}
	p.RegisterFlags(10 * time.Minute)
	flag.IntVar(&p.conns, "conns", 64, "concurrent keep-alive connections, one request in flight each")
	flag.DurationVar(&p.warmup, "warmup", 2*time.Second, "unmeasured load before each measurement")
	flag.DurationVar(&p.duration, "duration", 15*time.Second, "measured load per target, split over the rounds")
	flag.IntVar(&p.rounds, "rounds", 3, "rounds; each loads every target in turn, so drift in the machine's load hits all alike")
	flag.Parse()
	p.Main(p.validate, func(ctx context.Context) error { return run(ctx, p) })
}

func (p params) validate() error {
	if p.conns < 1 || p.rounds < 1 || p.duration <= 0 || p.warmup < 0 {
		return errors.New("-conns, -rounds and -duration must be positive, -warmup not negative")
	}
	return nil
}

func run(ctx context.Context, p params) error {
	work, err := os.MkdirTemp("", "wharf-bench-providers-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	bin := filepath.Join(work, "benchprovider")
	benchkit.Progress("building the bench provider")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "./test/bench/providers/benchprovider").CombinedOutput(); err != nil {
		return fmt.Errorf("go build benchprovider: %w\n%s", err, out)
	}

	// The handler process behind nginx and the direct target.
	sockDir := filepath.Join(work, "upstream")
	if err := os.Mkdir(sockDir, 0o755); err != nil {
		return err
	}
	if err := os.Chmod(work, 0o755); err != nil { // nginx may run as nobody
		return err
	}
	socket := filepath.Join(sockDir, "http.sock")
	up := exec.Command(bin, "-socket", socket)
	up.Stderr = os.Stderr
	if err := up.Start(); err != nil {
		return err
	}
	defer func() { _ = up.Process.Signal(syscall.SIGTERM); _ = up.Wait() }()

	benchkit.Progress("starting wharf-hub with the bench provider")
	hub, err := benchkit.StartHub(ctx, benchkit.Options{Bin: p.Bin, DirPrefix: "wharf-bench-providers-hub-", Args: []string{"--provider", "bench=" + bin}})
	if err != nil {
		return err
	}
	defer hub.Stop()
	pki := filepath.Join(hub.DataDir(), "pki")
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(filepath.Join(pki, "serving.crt"))
	if err != nil || !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("hub serving certificate: %v", err)
	}
	tlsCfg := &tls.Config{RootCAs: pool}
	admin := hub.Config("")

	nginxDir := filepath.Join(work, "nginx")
	if err := os.Mkdir(nginxDir, 0o700); err != nil {
		return err
	}
	port, nginxPid, stopNginx, err := startNginx(ctx, nginxDir, socket, filepath.Join(pki, "serving.crt"), filepath.Join(pki, "serving.key"))
	if err != nil {
		return err
	}
	defer stopNginx()

	// A bare Go reverse proxy, for comparison only.
	goPort, err := freePort()
	if err != nil {
		return err
	}
	goProxy := exec.Command(bin, "-socket", socket, "-proxy", fmt.Sprintf("127.0.0.1:%d", goPort),
		"-cert", filepath.Join(pki, "serving.crt"), "-key", filepath.Join(pki, "serving.key"))
	goProxy.Stderr = os.Stderr
	if err := goProxy.Start(); err != nil {
		return err
	}
	defer func() { _ = goProxy.Process.Signal(syscall.SIGTERM); _ = goProxy.Wait() }()

	targets := []target{
		{name: "direct", url: "http://upstream/x", socket: socket, pids: func() []int { return []int{up.Process.Pid} }},
		{name: "nginx", url: fmt.Sprintf("https://127.0.0.1:%d/x", port), tls: tlsCfg,
			pids: func() []int { return append(withChildren(nginxPid), up.Process.Pid) }},
		{name: "hub", url: hub.URL() + "/services/providers/bench/x", token: admin.BearerToken, tls: tlsCfg,
			pids: func() []int { return withChildren(hub.Pid()) }},
		{name: "go-rp", url: fmt.Sprintf("https://127.0.0.1:%d/x", goPort), tls: tlsCfg,
			pids: func() []int { return []int{goProxy.Process.Pid, up.Process.Pid} }},
	}
	// The plugin starts after the hub is ready.
	if err := waitOK(ctx, targets[2]); err != nil {
		return hub.Annotate(err)
	}
	if err := waitOK(ctx, targets[3]); err != nil {
		return err
	}
	results := make([]*result, len(targets))
	for i, t := range targets {
		results[i] = &result{name: t.name}
	}
	per := p.duration / time.Duration(p.rounds)
	for round := 1; round <= p.rounds; round++ {
		for i, t := range targets {
			benchkit.Progress("round %d/%d, %s: %d connections, %s warm-up, %s measured", round, p.rounds, t.name, p.conns, p.warmup, per)
			if err := load(ctx, t, p.conns, p.warmup, per, results[i]); err != nil {
				return err
			}
		}
	}
	report(os.Stdout, p, results)
	return nil
}

// waitOK waits until the target answers 200 with the handler's body.
func waitOK(ctx context.Context, t target) error {
	c := t.client(1)
	defer c.CloseIdleConnections()
	var last error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if last = fetch(ctx, c, t); last == nil {
			return nil
		}
	}
	return fmt.Errorf("%s not serving: %w", t.name, last)
}

func report(w *os.File, p params, rs []*result) {
	fmt.Fprintf(w, "\nprovider proxy benchmark: %d keep-alive connections, %s per target in %d rounds, %d-byte answers, GOMAXPROCS %d, %d CPUs\n",
		p.conns, p.duration, p.rounds, bodyLen, runtime.GOMAXPROCS(0), runtime.NumCPU())
	fmt.Fprintf(w, "%-8s %10s %10s %10s %10s %16s %16s\n", "target", "requests", "rps", "p50 ms", "p99 ms", "server CPU µs/req", "client CPU µs/req")
	by := map[string]benchkit.Summary{}
	rps := map[string]float64{}
	for _, r := range rs {
		s := r.lat.Summarize()
		by[r.name], rps[r.name] = s, r.rps()
		fmt.Fprintf(w, "%-8s %10d %10.0f %10.3f %10.3f %16.1f %16.1f\n", r.name, r.requests, r.rps(), benchkit.Ms(s.P50), benchkit.Ms(s.P99),
			perRequest(r.server, r.requests), perRequest(r.client, r.requests))
	}
	fmt.Fprintf(w, "hub/nginx rps: %.2f (target >= 0.80)\n", rps["hub"]/rps["nginx"])
	fmt.Fprintf(w, "p99 added over direct: hub %.3f ms (target <= 1 ms), nginx %.3f ms\n",
		benchkit.Ms(by["hub"].P99-by["direct"].P99), benchkit.Ms(by["nginx"].P99-by["direct"].P99))
	fmt.Fprintf(w, "hub/go-rp rps: %.2f (go-rp: a bare Go ReverseProxy, the floor of a net/http proxy)\n", rps["hub"]/rps["go-rp"])
}

// perRequest is d per request in microseconds.
func perRequest(d time.Duration, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(d) / float64(time.Microsecond) / float64(n)
}
