package ha

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// answer is one request to singleprobe's /whoami through a hub.
type answer struct {
	at       time.Time
	ok       bool
	instance string
	why      string // for a failed one
}

// prober asks singleprobe who it is through one hub every 50 ms.
type prober struct {
	base string
	hc   *http.Client

	mu      sync.Mutex // guards answers
	answers []answer
	cancel  context.CancelFunc
	done    chan struct{}
}

func (b *bed) startProber(t *testing.T, base string) *prober {
	ctx, cancel := context.WithCancel(t.Context())
	p := &prober{base: base, hc: b.httpClient(), cancel: cancel, done: make(chan struct{})}
	p.hc.Timeout = 3 * time.Second
	go func() {
		defer close(p.done)
		for ctx.Err() == nil {
			a := p.ask(ctx)
			if ctx.Err() != nil {
				return // cut by the prober's own stop
			}
			p.mu.Lock()
			p.answers = append(p.answers, a)
			p.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(p.stop)
	return p
}

func (p *prober) stop() { p.cancel(); <-p.done }

func (p *prober) ask(ctx context.Context) answer {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/services/providers/singleprobe/whoami", nil)
	req.Header.Set("Authorization", "Bearer "+loadToken)
	req.Header.Set("X-Wharf-Workspace", "root")
	a := answer{at: time.Now()}
	resp, err := p.hc.Do(req)
	if err != nil {
		a.why = err.Error()
		return a
	}
	defer resp.Body.Close()
	var body struct{ Instance string }
	if resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&body) == nil {
		a.ok, a.instance = true, body.Instance
	} else {
		a.why = resp.Status
	}
	return a
}

// current is the instance the latest successful answer came from.
func (p *prober) current() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.answers) - 1; i >= 0; i-- {
		if p.answers[i].ok {
			return p.answers[i].instance
		}
	}
	return ""
}

// firstOtherAfter is when the first answer after t came from an instance
// other than old.
func (p *prober) firstOtherAfter(t time.Time, old string) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, a := range p.answers {
		if a.at.After(t) && a.ok && a.instance != old {
			return a.at, true
		}
	}
	return time.Time{}, false
}

// interval is when one singleprobe instance served, on CLOCK_MONOTONIC.
type interval struct {
	instance   string
	first, end int64
	requests   int
}

// servingIntervals reads the serving log every instance appended to.
func servingIntervals(t *testing.T, path string) []interval {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	by := map[string]*interval{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 {
			t.Fatalf("serving log line %q", sc.Text())
		}
		start, err1 := strconv.ParseInt(fs[1], 10, 64)
		end, err2 := strconv.ParseInt(fs[2], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("serving log line %q", sc.Text())
		}
		iv, ok := by[fs[0]]
		if !ok {
			iv = &interval{instance: fs[0], first: start, end: end}
			by[fs[0]] = iv
		}
		iv.first, iv.end = min(iv.first, start), max(iv.end, end)
		iv.requests++
	}
	var out []interval
	for _, iv := range by {
		out = append(out, *iv)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].first < out[j].first })
	return out
}

// overlaps reports every pair of instances whose serving intervals
// overlap: two instances serving at once.
func overlaps(ivs []interval) []string {
	var out []string
	for i := 1; i < len(ivs); i++ {
		for j := 0; j < i; j++ {
			if ivs[i].first <= ivs[j].end {
				out = append(out, fmt.Sprintf("%s served [%d, %d] while %s served from %d", ivs[j].instance, ivs[j].first, ivs[j].end, ivs[i].instance, ivs[i].first))
			}
		}
	}
	return out
}
