package edgesbench

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	wetcd "github.com/wharfhub/wharf/hub/etcd"
)

func TestParseStatCPU(t *testing.T) {
	// utime 250 and stime 50 ticks; the command holds spaces and a ")".
	line := "1234 (we ird) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 100 0 0\n"
	d, err := parseStatCPU(line)
	if err != nil || d != 3*time.Second {
		t.Fatalf("parseStatCPU = %v, %v; want 3s", d, err)
	}
	if _, err := parseStatCPU("1234 (x) S 1"); err == nil {
		t.Fatal("short stat line: no error")
	}
}

// TestProcessAccounting reads this process and a child from the real /proc.
func TestProcessAccounting(t *testing.T) {
	if rss, err := RSSKiB(os.Getpid()); err != nil || rss <= 0 {
		t.Fatalf("RSSKiB(self) = %d, %v", rss, err)
	}
	// Burn a little CPU so the counter moves.
	before, err := CPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		after, err := CPUTime(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if after > before {
			break
		}
		x := 0
		for i := range 10_000_000 {
			x += i
		}
		_ = x
	}
	if after, _ := CPUTime(os.Getpid()); after <= before {
		t.Fatalf("CPU time did not grow: %v then %v", before, after)
	}
	// A child found by its executable's base name, as the hub's plugin is.
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "wharf-provider-fake")
	b, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if got := ChildRunning(os.Getpid(), "wharf-provider-fake"); got != cmd.Process.Pid {
		t.Fatalf("ChildRunning = %d, want %d (children %v)", got, cmd.Process.Pid, Children(os.Getpid()))
	}
	if got := ChildRunning(os.Getpid(), "wharf-provider-edges"); got != 0 {
		t.Fatalf("ChildRunning(no such child) = %d", got)
	}
}

func TestClassify(t *testing.T) {
	const c = "abcdefghij012345"
	for key, want := range map[string]string{
		"/registry/edges.wharf.dev/edges/" + c + "/lab":            ClassEdges,
		"/registry/leases/" + c + "/kube-node-lease/lab":           ClassWorkspace,
		"/registry/events/" + c + "/default/x.1":                   ClassWorkspace,
		"/registry/leases/root00000000000/kube-system/wharf-edges": ClassHub,
		"/registry/providers.wharf.dev/catalogentries/root/edges":  ClassHub,
	} {
		if got := Classify(key, c); got != want {
			t.Errorf("Classify(%q) = %q, want %q", key, got, want)
		}
	}
}

// TestWriteCounter counts real writes on a real (embedded) etcd, reached
// over its unix socket as the benchmark reaches the hub's.
func TestWriteCounter(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "edb-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	e, err := wetcd.StartEmbedded(ctx, filepath.Join(dir, "etcd"))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{e.ClientURL}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	const c = "abcdefghij012345"
	// Written before the counter starts: must not count.
	if _, err := cli.Put(ctx, "/registry/edges.wharf.dev/edges/"+c+"/old", "x"); err != nil {
		t.Fatal(err)
	}
	w, err := WatchWrites(ctx, e.ClientURL, c)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, k := range []string{
		"/registry/edges.wharf.dev/edges/" + c + "/a", "/registry/edges.wharf.dev/edges/" + c + "/a",
		"/registry/leases/" + c + "/ns/a", "/registry/leases/root/ns/hub",
	} {
		if _, err := cli.Put(ctx, k, "v"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Delete(ctx, "/registry/leases/"+c+"/ns/a"); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{ClassEdges: 2, ClassWorkspace: 2, ClassHub: 1}
	var got map[string]int
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got, err = w.Snapshot(); err != nil {
			t.Fatal(err)
		}
		if got[ClassEdges] == 2 && got[ClassWorkspace] == 2 && got[ClassHub] == 1 {
			break
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("counts = %v, want %v", got, want)
		}
	}
	if top := w.TopKeys(1); len(top) != 1 || top[0].N != 2 || !strings.HasSuffix(top[0].Key, "/a") {
		t.Fatalf("TopKeys = %v", top)
	}
}

func TestDistAndReport(t *testing.T) {
	var d []time.Duration
	for i := 10; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	if got := DistOf(d); got.P50 != 5*time.Millisecond || got.P90 != 9*time.Millisecond {
		t.Fatalf("DistOf = %+v", got)
	}
	if got := MBps(100e6, []time.Duration{4 * time.Second, time.Second, 2 * time.Second}); got != 50 {
		t.Fatalf("MBps = %v, want 50 (the median run)", got)
	}
	var buf bytes.Buffer
	f := &Fleet{Edges: 10, Joined: 10, Connected: 10, Ready: 10, RSSEmptyKiB: 1000, RSSJoinedKiB: 1100, RSSConnectedKiB: 1600,
		Loaded:   Window{D: time.Minute, HubCPU: 600 * time.Millisecond, Writes: map[string]int{ClassHub: 4}},
		Baseline: Window{D: 30 * time.Second, HubCPU: 150 * time.Millisecond, Writes: map[string]int{ClassHub: 1}}}
	l := &Latency{Path: "/api/v1/namespaces", N: 10, Direct: Dist{P50: 2 * time.Millisecond, P90: 4 * time.Millisecond}, Edge: Dist{P50: 3 * time.Millisecond, P90: 4 * time.Millisecond}}
	Report(&buf, f, l, nil, map[string]string{"ssh": "no sshd"})
	out := buf.String()
	// 50 KiB per tunnel; 1% of a core loaded vs 0.5% baseline; 4 and 2
	// writes a minute; the GET ratios; the part that did not run.
	for _, want := range []string{"50.0", "1.00%", "0.50%", "2.00x", "4.0", "2.0", "1.50x", "1.00x", "not run: no sshd"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestParseSamples(t *testing.T) {
	s := ParseSamples(`# HELP wharf_edges_connected Edges whose agent tunnel is up.
# TYPE wharf_edges_connected gauge
wharf_edges_connected 207
wharf_edges_tunnel_dials_total{result="success"} 300
wharf_edges_tunnel_dials_total{result="error"} 2 1700000000000
wharf_edges_tunnel_dial_duration_seconds_sum 1.5
wharf_edges_weird{path="a b}c"} 4
garbage line
`)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"wharf_edges_connected", nil, 207},
		{"wharf_edges_tunnel_dials_total", nil, 302},
		{"wharf_edges_tunnel_dials_total", []string{`result="success"`}, 300},
		{"wharf_edges_tunnel_dial_duration_seconds_sum", nil, 1.5},
		{"wharf_edges_weird", nil, 4},
		{"wharf_edges_missing", nil, 0},
	} {
		if got := s.Sum(c.name, c.labels...); got != c.want {
			t.Errorf("Sum(%s, %v) = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}
