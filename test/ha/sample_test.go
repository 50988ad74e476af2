package ha

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// sample is one reading of a hub process.
type sample struct {
	at                     time.Duration // since the sampler started
	rssMiB, goroutines, fd float64
	// heapInuseMiB and heapAllocMiB are the runtime's figures as /metrics
	// reports them (between collections, so they swing with the GC cycle);
	// liveMiB is HeapAlloc right after a forced collection: the live heap,
	// the figure a leak must move.
	heapInuseMiB, heapAllocMiB, liveMiB float64
}

// sampler reads a hub's RSS and open files from /proc, its goroutines and
// heap from /metrics and its live heap from /debug/pprof/heap?gc=1 every
// interval.
type sampler struct {
	h  *hubProc
	b  *bed
	hc *http.Client
	mu sync.Mutex // guards samples
	s  []sample
}

func (b *bed) startSampler(ctx context.Context, h *hubProc, every time.Duration) *sampler {
	sm := &sampler{h: h, b: b, hc: b.httpClient()}
	go func() {
		start := time.Now()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			m := metrics(sm.hc, h.URL)
			s := sample{
				at: time.Since(start), rssMiB: rssMiB(h.pid()), fd: openFiles(h.pid()),
				goroutines: m["go_goroutines"], heapInuseMiB: m["go_memstats_heap_inuse_bytes"] / (1 << 20),
				heapAllocMiB: m["go_memstats_heap_alloc_bytes"] / (1 << 20), liveMiB: liveHeapMiB(sm.hc, h.URL),
			}
			if s.rssMiB > 0 && s.goroutines > 0 && s.liveMiB > 0 {
				sm.mu.Lock()
				sm.s = append(sm.s, s)
				sm.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return sm
}

func rssMiB(pid int) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) >= 2 && fs[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(fs[1], 64)
			return kb / 1024
		}
	}
	return 0
}

func openFiles(pid int) float64 {
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0
	}
	return float64(len(es))
}

// adminGet GETs a process-wide path as the hub administrator.
func adminGet(hc *http.Client, url string) (*http.Response, error) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+loadToken)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return resp, nil
}

// metrics reads the unlabelled series of a hub's /metrics.
func metrics(hc *http.Client, base string) map[string]float64 {
	out := map[string]float64{}
	resp, err := adminGet(hc, base+"/metrics")
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.ContainsAny(name, "{#") {
			continue
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			out[name] = f
		}
	}
	return out
}

// liveHeapMiB forces a collection in the hub (pprof's gc=1) and reads the
// HeapAlloc that follows it from the text profile's MemStats trailer.
func liveHeapMiB(hc *http.Client, base string) float64 {
	resp, err := adminGet(hc, base+"/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "# HeapAlloc = "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f / (1 << 20)
		}
	}
	return 0
}

// saveHeapProfile writes the hub's heap profile (after a collection) to
// dir/<hub>-<label>.pb.gz, for `go tool pprof -base early late`.
func (sm *sampler) saveHeapProfile(dir, label string) (string, error) {
	resp, err := adminGet(sm.hc, sm.h.URL+"/debug/pprof/heap?gc=1")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	p := filepath.Join(dir, sm.h.Name+"-"+label+".pb.gz")
	f, err := os.Create(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		return "", fmt.Errorf("heap profile of %s: %w", sm.h.Name, err)
	}
	return p, nil
}
