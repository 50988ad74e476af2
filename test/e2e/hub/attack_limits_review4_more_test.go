package hub

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Issue 24, fourth outside review (docs/reviews/issue-24-review-4.md):
// rows for the breaks 2, 3, 5, 6 and 8 and the weak attempts 13, 14 (and
// 23, which held) of the review. Their common cause was r24d:1's: past its
// tenant's held refusals (seats plus queue places), or past the failure
// throttle's budget, every further 429 was answered at once on the same
// kept-alive connection, thousands a second, which took the hub's CPU and
// its lease renewals. Each row floods with the attempt's traffic shape at
// a small scale, from loopback addresses of its own (127.4x.y.z, never the
// hub's 127.0.0.1, as the review's rotating generator), while alice, the
// victim, works from the hub's own address. Rows count answers and
// connections, never times: the victim's requests all succeed, every
// refusal is a 429 with Retry-After, and refusals not held close their
// connection (so the client needs more connections than it has workers).

// r4Answer is how a flood's answer is counted: the status, "429+close"
// for a refusal that closes its connection, "429 without Retry-After",
// or "ERR" (the connection was closed before an answer: the handshake
// bound).
func r4Answer(resp *http.Response, err error) string {
	if err != nil {
		return "ERR"
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	switch {
	case resp.StatusCode != http.StatusTooManyRequests:
		return fmt.Sprint(resp.StatusCode)
	case resp.Header.Get("Retry-After") == "":
		return "429 without Retry-After"
	case resp.Close:
		return "429+close"
	}
	return "429"
}

// r4Flood runs workers, each sending each requests made by mk with the
// client of its own; it returns the answers and the connections the
// clients opened.
func r4Flood(workers, each int, client func(w int) *http.Client, mk func(w, i int) *http.Request) (*codes, int64) {
	var conns atomic.Int64
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		if !i.Reused {
			conns.Add(1)
		}
	}}
	got := flood(workers, each, client, func(cl *http.Client, w, i int, got *codes) {
		req := mk(w, i)
		got.add(r4Answer(cl.Do(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))))
	})
	return got, conns.Load()
}

// r4Req is a request as token (none when ""), with header.
func r4Req(method, url, token, body string, header map[string]string) *http.Request {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return req
}

// r4Victim runs alice's create, get, list and delete of small ConfigMaps
// in her home (the review's victim.py), n operations, until done; it
// returns her failures.
func r4Victim(e *attackEnv, tag string, n int) <-chan []string {
	out := make(chan []string, 1)
	go func() {
		var failed []string
		ws := "/clusters/" + e.vars["aliceHome"]
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("victim-%s-%d", tag, i/4)
			s := []step{
				{as: "alice", method: http.MethodPost, path: cmPath(ws), body: cmJSON(name), want: http.StatusCreated},
				{as: "alice", method: http.MethodGet, path: cmPath(ws) + "/" + name, want: http.StatusOK},
				{as: "alice", method: http.MethodGet, path: cmPath(ws) + "?limit=50", want: http.StatusOK},
				{as: "alice", method: http.MethodDelete, path: cmPath(ws) + "/" + name, want: http.StatusOK},
			}[i%4]
			if code, body := e.send(s, e.vars); code != s.want {
				failed = append(failed, fmt.Sprintf("%s %s: %d %.200s", s.method, s.path, code, body))
			}
		}
		out <- failed
	}()
	return out
}

// r4Check fails row unless the victim had no failure and the flood got
// only the answers allowed (a 429 always with Retry-After).
func r4Check(t *testing.T, row string, got *codes, victim []string, allowed ...string) {
	t.Helper()
	got.mu.Lock()
	defer got.mu.Unlock()
	for k, n := range got.n {
		if !strings.HasPrefix(k, "429") || k == "429 without Retry-After" {
			if !slices.Contains(allowed, k) {
				t.Errorf("%s: %d answers %q", row, n, k)
			}
		}
	}
	if len(victim) != 0 {
		t.Errorf("%s: the victim had %d failures: %s", row, len(victim), strings.Join(victim, "; "))
	}
}

// r4Closed fails row unless the hub refused some of the flood, every
// refusal the clients (got and others) saw keep its connection was one
// the hub held (wharf_refusals_total, held="true"), and, when some closed,
// the clients needed more connections than workers (the cause's fix; on
// 2f759e0 no refusal closed, and each worker kept its one connection).
// It does not ask that some refusal closed: how many arrive past the
// hold's bound depends on the machine's load (r24d:3 and r24d:5 saw
// every refusal held on a loaded machine).
func r4Closed(t *testing.T, row string, e *attackEnv, before refusalCount, got *codes, conns int64, workers int, others ...*codes) {
	t.Helper()
	after := refusals(t, e)
	held, atOnce := after.held-before.held, after.atOnce-before.atOnce
	kept, closed := got.get("429"), got.get("429+close")
	for _, o := range others {
		kept, closed = kept+o.get("429"), closed+o.get("429+close")
	}
	t.Logf("%s: the hub held %v refusals and closed %v at once; the clients saw %d kept and %d closed", row, held, atOnce, kept, closed)
	// Whether the hub holds a refusal or closes it depends on how many
	// arrive at once, which the machine's load decides; what must hold
	// is that no refusal answered at once leaves its connection open.
	if float64(kept) > held {
		t.Errorf("%s: %d refusals kept their connection, only %v were held: refusals not held must close", row, kept, held)
	}
	if float64(closed) > atOnce {
		t.Errorf("%s: %d refusals closed their connection, the hub counted %v", row, closed, atOnce)
	}
	if held+atOnce == 0 {
		t.Errorf("%s: the hub refused nothing: %s", row, got)
	}
	if closed > 0 && conns <= int64(workers) {
		t.Errorf("%s: %d connections for %d workers: refusals not held must cost a reconnect", row, conns, workers)
	}
}

// refusalCount is the hub's wharf_refusals_total.
type refusalCount struct{ held, atOnce float64 }

func refusals(t *testing.T, e *attackEnv) refusalCount {
	t.Helper()
	code, body := e.as("hubadmin", http.MethodGet, "/metrics", "", nil)
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %.300s", code, body)
	}
	var c refusalCount
	for _, l := range strings.Split(body, "\n") {
		var v float64
		if _, err := fmt.Sscanf(l, `wharf_refusals_total{held="true"} %g`, &v); err == nil {
			c.held = v
		}
		if _, err := fmt.Sscanf(l, `wharf_refusals_total{held="false"} %g`, &v); err == nil {
			c.atOnce = v
		}
	}
	return c
}

// TestAttackLimitsReview4More: the breaks on one hub with small budgets
// (20 read-only and 10 mutating seats, 2 and 1 per tenant, 4 watches per
// tenant) that runs the hello provider. Subtests run one after another:
// each flood is alone on the hub.
func TestAttackLimitsReview4More(t *testing.T) {
	t.Parallel()
	hello := providerBinary(t, "./sdk/examples/hello", "hello")
	e := startReviewFairHub(t, "--provider", "hello="+hello, "--max-requests-inflight", "20", "--max-mutating-requests-inflight", "10",
		"--max-watches-per-tenant", "4")
	h := e.h
	mal := e.tokens["mallory"]
	missing := h.URL + cmPath("/clusters/"+e.vars["malloryHome"]) + "/none"
	rotating := func(block int) func(w int) *http.Client {
		return func(w int) *http.Client { return connsClient(h, attackerAddr(block, w), true, false) }
	}

	t.Run("r24d:2/watches past the cap and 200 KB writers: the refusals not held close, the victim is served", func(t *testing.T) {
		// mallory holds her 4 watches, never reading them.
		w := &watches{h: h}
		defer w.closeAll()
		watch := cmPath("/clusters/"+e.vars["malloryHome"]) + "?watch=1"
		for i := 0; i < 4; i++ {
			if code, _, body := w.open(mal, watch); code != http.StatusOK {
				t.Fatalf("watch %d: %d %.200s", i, code, body)
			}
		}
		// 4 writers of 200 KB ConfigMaps beside the watch flood.
		writes := &codes{}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for k := 0; k < 4; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cl := connsClient(h, attackerAddr(42, 240+k), true, false)
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w%d-%d"},"data":{"a":%q}}`, k, i, strings.Repeat("x", 200<<10))
					writes.add(r4Answer(cl.Do(r4Req(http.MethodPost, h.URL+cmPath("/clusters/"+e.vars["malloryHome"]), mal, body, nil))))
				}
			}()
		}
		victim := r4Victim(e, "2", 20)
		before := refusals(t, e)
		const workers = 200
		got, conns := r4Flood(workers, 3, rotating(42), func(w, i int) *http.Request {
			return r4Req(http.MethodGet, h.URL+watch, mal, "", nil)
		})
		v := <-victim
		close(stop)
		wg.Wait()
		t.Logf("r24d:2: watches %s(%d connections for %d workers); writers %s; victim %d failures", got, conns, workers, writes, len(v))
		// The cap held: not one watch past it was admitted.
		r4Check(t, "r24d:2", got, v, "ERR")
		r4Check(t, "r24d:2 writers", writes, nil, "201", "403", "ERR")
		r4Closed(t, "r24d:2", e, before, got, conns, workers, writes)
	})

	t.Run("r24d:3/the provider route, rotating addresses: the refusals not held close, the victim is served", func(t *testing.T) {
		whoami := h.URL + "/services/providers/hello/whoami"
		eventually(t, 90*time.Second, func() error {
			if code, body := h.doAs(e.tokens["alice"], http.MethodGet, "/services/providers/hello/whoami", ""); code != http.StatusOK {
				return fmt.Errorf("hello not serving yet: %d %.200s", code, body)
			}
			return nil
		})
		victim := r4Victim(e, "3", 20)
		before := refusals(t, e)
		const workers = 200
		got, conns := r4Flood(workers, 5, rotating(43), func(w, i int) *http.Request {
			return r4Req(http.MethodGet, whoami, mal, "", nil)
		})
		v := <-victim
		t.Logf("r24d:3: %s(%d connections for %d workers); victim %d failures", got, conns, workers, len(v))
		r4Check(t, "r24d:3", got, v, "200", "ERR")
		r4Closed(t, "r24d:3", e, before, got, conns, workers)
	})

	t.Run("r24d:5/GETs of a missing ConfigMap from rotating addresses: the refusals not held close, the victim is served", func(t *testing.T) {
		victim := r4Victim(e, "5", 20)
		before := refusals(t, e)
		const workers = 200
		got, conns := r4Flood(workers, 6, rotating(45), func(w, i int) *http.Request {
			return r4Req(http.MethodGet, missing, mal, "", nil)
		})
		v := <-victim
		t.Logf("r24d:5: %s(%d connections for %d workers); victim %d failures", got, conns, workers, len(v))
		r4Check(t, "r24d:5", got, v, "404", "ERR")
		r4Closed(t, "r24d:5", e, before, got, conns, workers)
	})

	// Without a credential, from the review's rotating addresses: every
	// answer is served, refused with 429 and Retry-After, or the
	// connection closed at the handshake bound; the hub stays ready.
	for _, tc := range []struct {
		row, what string
		block     int
		keepAlive bool
		bad       bool // every other request a random bearer token
	}{
		{row: "r24d:6", what: "a new TLS connection per /livez, rotating addresses", block: 46},
		{row: "r24d:13", what: "bad tokens and /livez, a new connection each, rotating addresses", block: 53, bad: true},
		{row: "r24d:14+23", what: "/livez on kept-alive connections, rotating addresses", block: 54, keepAlive: true},
	} {
		t.Run(tc.row+"/"+tc.what+": served or refused, the victim is served", func(t *testing.T) {
			victim := r4Victim(e, fmt.Sprint(tc.block), 20)
			got, _ := r4Flood(100, 4, func(w int) *http.Client { return connsClient(h, attackerAddr(tc.block, w), tc.keepAlive, false) },
				func(w, i int) *http.Request {
					if tc.bad && (w+i)%2 == 1 {
						return r4Req(http.MethodGet, h.URL+"/api", fmt.Sprintf("random-%d-%d-%d", tc.block, w, i), "", nil)
					}
					return r4Req(http.MethodGet, h.URL+"/livez", "", "", nil)
				})
			v := <-victim
			t.Logf("%s: %s; victim %d failures", tc.row, got, len(v))
			r4Check(t, tc.row, got, v, "200", "401", "ERR")
			if got.get("429")+got.get("429+close")+got.get("ERR") == 0 {
				t.Errorf("%s: 400 requests without a valid credential from one prefix were never refused: %s", tc.row, got)
			}
			hubHealthy(t, h)
		})
	}

	t.Run("r24d:8/random bearer tokens on kept-alive connections, rotating addresses: the throttle's 429s close, the victim is served", func(t *testing.T) {
		victim := r4Victim(e, "8", 20)
		before := refusals(t, e)
		const workers = 100
		got, conns := r4Flood(workers, 12, rotating(48), func(w, i int) *http.Request {
			return r4Req(http.MethodGet, h.URL+"/api", fmt.Sprintf("random-%d-%d-%d", w, i, time.Now().UnixNano()), "", nil)
		})
		v := <-victim
		t.Logf("r24d:8: %s(%d connections for %d workers); victim %d failures", got, conns, workers, len(v))
		r4Check(t, "r24d:8", got, v, "401", "ERR")
		r4Closed(t, "r24d:8", e, before, got, conns, workers)
		hubHealthy(t, h)
	})
}
