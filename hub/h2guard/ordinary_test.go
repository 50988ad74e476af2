package h2guard

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/component-base/metrics/testutil"
)

// jwt is a bearer token of an ordinary size (a service account's or an
// OIDC issuer's JWT is 800-1,200 bytes).
var jwt = strings.Repeat("eyJhbGciOiJSUzI1NiIsImtpZCI6", 36)

// TestOrdinaryCharges: what legitimate clients do is never closed at the
// defaults, and what each costs is logged (the doc of the defaults
// quotes it).
func TestOrdinaryCharges(t *testing.T) {
	for _, tc := range []struct {
		name string
		// requests to send, one after another on one connection
		n int
		// step advances the fake clock after each request (a client's pace)
		step   time.Duration
		method string
		query  string
		body   int
		header func(h http.Header)
		// want is the answer's body size
		want int
	}{
		{name: "2,000 kubectl-like GETs at 100 a second", n: 2000, step: 10 * time.Millisecond, method: http.MethodGet, header: kubectlHeaders},
		{name: "300 POSTs at once", n: 300, method: http.MethodPost, body: 600, header: kubectlHeaders},
		{name: "a 100 MiB answer", n: 1, method: http.MethodGet, query: "?n=" + fmt.Sprint(100<<20), header: kubectlHeaders, want: 100 << 20},
		{name: "a 10 MiB answer", n: 1, method: http.MethodGet, query: "?n=" + fmt.Sprint(10<<20), header: kubectlHeaders, want: 10 << 20},
		{name: "an 8 MiB body", n: 1, method: http.MethodPost, body: 8 << 20, header: kubectlHeaders},
		{name: "a head of the server's 1 MiB bound", n: 1, method: http.MethodGet, header: func(h http.Header) {
			h.Set("X-Big", strings.Repeat("b", 1<<20-2000))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := closedCounts(t)
			s := startServer(t, *NewOptions(), nil)
			cl := s.client()
			for i := 0; i < tc.n; i++ {
				req, err := http.NewRequest(tc.method, "https://"+s.addr+"/api/v1/namespaces/default/configmaps"+tc.query, bytes.NewReader(make([]byte, tc.body)))
				if err != nil {
					t.Fatal(err)
				}
				tc.header(req.Header)
				resp, err := cl.Do(req)
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				got, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || got != int64(tc.want) || resp.Header.Get("X-Body-Bytes") != fmt.Sprint(tc.body) {
					t.Fatalf("request %d: %d, %d bytes (%v), body %s", i, resp.StatusCode, got, err, resp.Header.Get("X-Body-Bytes"))
				}
				s.clock.Step(tc.step)
			}
			if len(s.conns) != 1 {
				t.Fatalf("%d connections, want 1", len(s.conns))
			}
			spent, left := s.spent(t, 0)
			t.Logf("%s: %d bytes charged in all (%d a request); %.0f of %d left", tc.name, spent, spent/int64(tc.n), left, DefaultBurst)
			if after := closedCounts(t); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("connections closed: %v, before %v", after, before)
			}
		})
	}
}

func kubectlHeaders(h http.Header) {
	h.Set("Authorization", "Bearer "+jwt)
	h.Set("User-Agent", "kubectl/v1.37.2 (linux/amd64) kubernetes/5a6f8e1")
	h.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")
	h.Set("Kubectl-Command", "kubectl get")
	h.Set("Kubectl-Session", "5d3c1f0e-6b8a-4e8f-9a7c-3f2b1d0e9c8a")
	h.Set("Content-Type", "application/json")
}

// TestBusyConnectionSlowed: a client multiplexing ordinary requests on one
// connection faster than its budget refills is slowed to the refill rate,
// never closed with its requests in flight; a head past PaceableHeadBytes
// that the budget cannot pay still closes the connection.
func TestBusyConnectionSlowed(t *testing.T) {
	o := *NewOptions()
	o.Burst, o.PerSecond = 16<<10, 16<<10 // ~25 kubectl-like requests at once
	// No block timers: the fake clock's only waiters are reads waiting
	// for the budget, so time passes only while one waits.
	o.BlockTimeout = 0
	for _, tc := range []struct {
		name    string
		workers int
		each    int
		header  func(h http.Header)
		// closed: the connection must be closed (header-bytes), not slowed
		closed bool
	}{
		{name: "400 kubectl-like GETs from 20 goroutines", workers: 20, each: 20, header: kubectlHeaders},
		{name: "heads of 20 KiB, past what is paced", workers: 4, each: 5, header: func(h http.Header) {
			kubectlHeaders(h)
			h.Set("X-Big", strings.Repeat("b", 20<<10))
		}, closed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := closedCounts(t)
			waited0, err := testutil.GetCounterMetricValue(headerWaits)
			if err != nil {
				t.Fatal(err)
			}
			s := startServer(t, o, nil)
			// The budget refills on the fake clock, which moves only
			// while a read waits for it.
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				for {
					select {
					case <-stop:
						return
					case <-time.After(time.Millisecond):
						if s.clock.HasWaiters() {
							s.clock.Step(100 * time.Millisecond)
						}
					}
				}
			}()
			cl := s.client()
			var wg sync.WaitGroup
			var mu sync.Mutex
			var failed []string
			for range tc.workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range tc.each {
						req, _ := http.NewRequest(http.MethodGet, "https://"+s.addr+"/api/v1/namespaces/default/configmaps", nil)
						tc.header(req.Header)
						resp, err := cl.Do(req)
						if err == nil {
							_, _ = io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
							if resp.StatusCode != http.StatusOK {
								err = fmt.Errorf("status %d", resp.StatusCode)
							}
						}
						if err != nil {
							mu.Lock()
							failed = append(failed, err.Error())
							mu.Unlock()
						}
					}
				}()
			}
			wg.Wait()
			after := closedCounts(t)
			waited, err := testutil.GetCounterMetricValue(headerWaits)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d of %d requests failed; waited %.1f s for the budget; closed %v, before %v", len(failed), tc.workers*tc.each, waited-waited0, after, before)
			if tc.closed {
				if after[reasonHeaderBytes] == before[reasonHeaderBytes] {
					t.Error("no connection was closed for header-bytes")
				}
				return
			}
			if len(failed) > 0 {
				t.Errorf("%d requests failed: %v", len(failed), failed[:min(len(failed), 3)])
			}
			if fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("connections closed: %v, before %v", after, before)
			}
			// 400 requests of ~600 bytes are ~15 budgets of 16 KiB, and
			// the clock moves only while a read waits: some must have.
			if waited-waited0 <= 0 {
				t.Errorf("the connection waited %.2f s for its budget: it was not slowed", waited-waited0)
			}
			if len(s.conns) != 1 {
				t.Errorf("%d connections, want 1", len(s.conns))
			}
		})
	}
}
