package revdialbench

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// The idle-memory scenario runs its agents in a child process (this test
// binary, re-executed), so that the hub process's heap and stacks contain
// hub-side state only.
const (
	envAgents = "REVDIAL_BENCH_AGENTS" // system name; set only in the child
	envAddr   = "REVDIAL_BENCH_ADDR"
	envCert   = "REVDIAL_BENCH_CERT"
	envCount  = "REVDIAL_BENCH_COUNT"
)

func TestMain(m *testing.M) {
	// remotedialer logs every connection at info level.
	logrus.SetLevel(logrus.ErrorLevel)
	if name := os.Getenv(envAgents); name != "" {
		os.Exit(runAgents(name))
	}
	os.Exit(m.Run())
}

// runAgents is the child: it connects the agents, says "ready", and keeps
// them idle until its stdin closes.
func runAgents(name string) int {
	der, err := base64.StdEncoding.DecodeString(os.Getenv(envCert))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cli, err := clientConfigFor(der)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	n, _ := strconv.Atoi(os.Getenv(envCount))
	var sys *system
	for _, s := range systems() {
		if s.name == name {
			sys = &s
		}
	}
	if sys == nil {
		fmt.Fprintln(os.Stderr, "unknown system", name)
		return 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := 0; i < n; i++ {
		sys.startAgent(ctx, os.Getenv(envAddr), cli, fmt.Sprintf("idle-%d", i))
	}
	fmt.Println("ready")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	return 0
}

// liveBytes is what the hub holds: live heap plus goroutine stacks.
func liveBytes() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc + m.StackInuse
}

// measureIdleMemory returns hub-side bytes per idle tunnel with n tunnels.
func measureIdleMemory(tb testing.TB, sys system, n int) (float64, error) {
	// Let the previous scenario's connections finish unwinding first, or
	// their memory is freed during the measurement and hides real cost.
	time.Sleep(3 * time.Second)
	h := sys.startHub(tb)
	defer h.close()
	before := liveBytes()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		envAgents+"="+sys.name,
		envAddr+"="+h.addr,
		envCert+"="+base64.StdEncoding.EncodeToString(certDER(h.serverTLS)),
		envCount+"="+strconv.Itoa(n),
	)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 0, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() {
		stdin.Close()
		_ = cmd.Wait()
	}()
	if err := waitFor(3*time.Minute, func() bool { return h.tunnels() >= n }); err != nil {
		return 0, fmt.Errorf("%d of %d tunnels up: %w", h.tunnels(), n, err)
	}
	// Let handshakes unwind and goroutines park before measuring.
	time.Sleep(2 * time.Second)
	after := liveBytes()
	return (float64(after) - float64(before)) / float64(n), nil
}
