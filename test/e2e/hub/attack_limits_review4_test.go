package hub

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"testing"
)

// Issue 24, fourth outside review, attempt 1 (and 7, 8 for failed
// authentication): 600 workers resending every 429 at once. Past the
// bounds of held refusals (its tenant's seats and queue places) every
// further refusal was answered at once on the same kept-alive connection,
// 4,000-12,500 a second; answering them took the hub's CPU and it missed
// its lease renewals (edges stopped in 4 runs of 4). Now such a refusal
// closes its connection, so each costs the client a new one and a metered
// TLS handshake. The rows count answers and connections, never times.
func TestAttackLimitsReview4Refusals(t *testing.T) {
	e := startReviewFairHub(t, "--max-requests-inflight", "20", "--max-mutating-requests-inflight", "10")
	h := e.h

	t.Run("r24d:1/a flood past the held refusals: each refusal not held closes its connection; the victim is served", func(t *testing.T) {
		const workers, each = 200, 15
		var newConns atomic.Int64
		tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, MaxIdleConnsPerHost: workers}
		defer tr.CloseIdleConnections()
		cl := &http.Client{Transport: tr}
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
			if !i.Reused {
				newConns.Add(1)
			}
		}}
		path := fmt.Sprintf("/clusters/%s/api/v1/namespaces/default/configmaps/none", e.vars["malloryHome"])
		var mu sync.Mutex
		codes := map[string]int{}
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < each; i++ {
					req, _ := http.NewRequest(http.MethodGet, h.URL+path, nil)
					req.Header.Set("Authorization", "Bearer "+e.tokens["mallory"])
					req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
					resp, err := cl.Do(req)
					key := "ERR"
					if err == nil {
						key = fmt.Sprint(resp.StatusCode)
						if resp.StatusCode == http.StatusTooManyRequests && resp.Close {
							key = "429+close"
						}
						// Drained, so that an answer that keeps its
						// connection lets the next request reuse it.
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					mu.Lock()
					codes[key]++
					mu.Unlock()
				}
			}()
		}
		// The victim, alone in her tenant, meanwhile.
		failed := 0
		for i := 0; i < 20; i++ {
			if code, body := h.doAs(e.tokens["alice"], http.MethodGet, fmt.Sprintf("/clusters/%s/api/v1/namespaces", e.vars["aliceHome"]), ""); code != http.StatusOK {
				failed++
				t.Logf("alice: %d %s", code, body)
			}
		}
		wg.Wait()
		t.Logf("mallory: %v, %d new connections for %d workers", codes, newConns.Load(), workers)
		if failed > 0 {
			t.Errorf("alice: %d of 20 requests failed", failed)
		}
		if codes["429+close"] == 0 {
			t.Fatalf("no refusal closed its connection: %v", codes)
		}
		if n := newConns.Load(); n <= workers {
			t.Errorf("%d new connections for %d workers: refusals not held must cost a reconnect", n, workers)
		}
	})

	t.Run("r24d:7/failed authentication over budget: the 429 closes its connection", func(t *testing.T) {
		closed := 0
		codes := map[int]int{}
		for i := 0; i < 60; i++ {
			req, _ := http.NewRequest(http.MethodGet, h.URL+"/api", nil)
			req.Header.Set("Authorization", fmt.Sprintf("Bearer review4-bad-%d", i))
			req.Header.Set("X-Forwarded-For", "203.0.113.74")
			resp, err := h.client().Do(req)
			if err != nil {
				codes[0]++
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[resp.StatusCode]++
			if resp.StatusCode == http.StatusTooManyRequests && resp.Close {
				closed++
			}
		}
		if closed == 0 {
			t.Fatalf("no throttled 429 closed its connection: %v", codes)
		}
	})
}
