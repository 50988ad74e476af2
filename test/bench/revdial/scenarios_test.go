package revdialbench

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const agentID = "a0"

// withAgent starts sys's hub and one in-process agent and waits until the
// tunnel is up.
func withAgent(tb testing.TB, sys system) (*hubSide, func()) {
	tb.Helper()
	h := sys.startHub(tb)
	ctx, cancel := context.WithCancel(context.Background())
	sys.startAgent(ctx, h.addr, h.cliTLS, agentID)
	if err := waitFor(30*time.Second, func() bool { return h.tunnels() >= 1 }); err != nil {
		tb.Fatalf("%s: agent never connected", sys.name)
	}
	// A tunnel may be registered a moment before its agent is ready to
	// pick up; one successful round trip proves it is.
	if err := waitFor(30*time.Second, func() bool { _, err := dialFirstByte(h); return err == nil }); err != nil {
		tb.Fatalf("%s: first dial never succeeded", sys.name)
	}
	return h, func() { cancel(); h.close() }
}

func waitFor(limit time.Duration, cond func() bool) error {
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return nil
		}
	}
	return fmt.Errorf("timed out after %v", limit)
}

// dialFirstByte measures Dial until the first echoed byte arrives.
func dialFirstByte(h *hubSide) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	c, err := h.dial(ctx, agentID)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if _, err := c.Write([]byte("ex")); err != nil {
		return 0, err
	}
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

type latency struct {
	p50, p99 time.Duration
	errors   int
}

// measureLatency dials samples times, one at a time, pausing between dials
// so that each is an isolated new connection (pause 0 measures back-to-back
// dials instead, where background work of the previous dial competes).
func measureLatency(h *hubSide, samples int, pause time.Duration) latency {
	var lat []time.Duration
	var errs int
	for i := 0; i < samples+samples/10; i++ {
		time.Sleep(pause)
		d, err := dialFirstByte(h)
		if err != nil {
			errs++
			continue
		}
		if i >= samples/10 { // the first tenth warms caches and pools
			lat = append(lat, d)
		}
	}
	if len(lat) == 0 {
		return latency{errors: errs}
	}
	slices.Sort(lat)
	return latency{p50: lat[len(lat)/2], p99: lat[len(lat)*99/100], errors: errs}
}

// measureThroughput moves total bytes hub → agent over one connection.
func measureThroughput(h *hubSide, total int64) (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, err := h.dial(ctx, agentID)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	hdr := make([]byte, 9)
	hdr[0] = 's'
	binary.BigEndian.PutUint64(hdr[1:], uint64(total))
	start := time.Now()
	if _, err := c.Write(hdr); err != nil {
		return 0, err
	}
	buf := make([]byte, 256<<10)
	for sent := int64(0); sent < total; {
		n := min(int64(len(buf)), total-sent)
		if _, err := c.Write(buf[:n]); err != nil {
			return 0, fmt.Errorf("after %d bytes: %w", sent, err)
		}
		sent += n
	}
	var ack [1]byte
	if _, err := io.ReadFull(c, ack[:]); err != nil || ack[0] != 'k' {
		return 0, fmt.Errorf("no ack: %v", err)
	}
	return float64(total) / time.Since(start).Seconds() / 1e6, nil
}

type concurrency struct {
	errors int
	total  time.Duration
	first  error
}

// measureConcurrentEcho opens n connections at once, each echoing its own
// id, and counts failures and mismatches.
func measureConcurrentEcho(h *hubSide, n int) concurrency {
	var errs atomic.Int64
	var firstErr sync.Once
	var first error
	fail := func(err error) {
		errs.Add(1)
		firstErr.Do(func() { first = err })
	}
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c, err := h.dial(ctx, agentID)
			if err != nil {
				fail(err)
				return
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(2 * time.Minute))
			want := "id-" + strconv.Itoa(i) + "\n"
			if _, err := io.WriteString(c, "e"+want); err != nil {
				fail(err)
				return
			}
			got, err := bufio.NewReader(c).ReadString('\n')
			if err != nil || got != want {
				fail(fmt.Errorf("echo %q, %v; want %q", got, err, want))
			}
		}()
	}
	wg.Wait()
	return concurrency{errors: int(errs.Load()), total: time.Since(start), first: first}
}

func envInt(name string, def int64) int64 {
	if v, err := strconv.ParseInt(os.Getenv(name), 10, 64); err == nil && v > 0 {
		return v
	}
	return def
}

var _ net.Conn // keep net imported for readers of the scenario signatures
