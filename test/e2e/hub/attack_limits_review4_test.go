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
		path := fmt.Sprintf("/clusters/%s/api/v1/namespaces/default/configmaps/none", e.vars["malloryHome"])
		codes, wait := floodKeptAlive(h, workers, each, func(int, int) *http.Request {
			req, _ := http.NewRequest(http.MethodGet, h.URL+path, nil)
			req.Header.Set("Authorization", "Bearer "+e.tokens["mallory"])
			return req
		}, func(resp *http.Response, _ []byte) string {
			if resp.StatusCode == http.StatusTooManyRequests && resp.Close {
				return "429+close"
			}
			return fmt.Sprint(resp.StatusCode)
		})
		// The victim, alone in her tenant, meanwhile.
		failed := 0
		for i := 0; i < 20; i++ {
			if code, body := h.doAs(e.tokens["alice"], http.MethodGet, fmt.Sprintf("/clusters/%s/api/v1/namespaces", e.vars["aliceHome"]), ""); code != http.StatusOK {
				failed++
				t.Logf("alice: %d %s", code, body)
			}
		}
		newConns := wait()
		t.Logf("mallory: %v, %d new connections for %d workers", codes, newConns, workers)
		if failed > 0 {
			t.Errorf("alice: %d of 20 requests failed", failed)
		}
		if codes["429+close"] == 0 {
			t.Fatalf("no refusal closed its connection: %v", codes)
		}
		if n := newConns; n <= workers {
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

// floodKeptAlive starts workers that each send each requests (made by
// request) one after another on kept-alive HTTP/1.1 connections, sending
// again the moment an answer comes. wait waits for them and returns how
// many connections they dialled; the answers are then counted in codes
// by key ("ERR" for a failed request).
func floodKeptAlive(h *hubProc, workers, each int, request func(w, i int) *http.Request, key func(*http.Response, []byte) string) (codes map[string]int, wait func() int64) {
	var dialled atomic.Int64
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, MaxIdleConnsPerHost: workers}
	cl := &http.Client{Transport: tr}
	// Counted as dialled: a connection dialled for one request may serve
	// another first, and then looks reused to both.
	trace := &httptrace.ClientTrace{ConnectDone: func(_, _ string, err error) {
		if err == nil {
			dialled.Add(1)
		}
	}}
	var mu sync.Mutex
	codes = map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				req := request(w, i)
				resp, err := cl.Do(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
				k := "ERR"
				if err == nil {
					// Read whole, so that an answer that keeps its
					// connection lets the next request reuse it.
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					k = key(resp, b)
				}
				mu.Lock()
				codes[k]++
				mu.Unlock()
			}
		}()
	}
	return codes, func() int64 {
		wg.Wait()
		tr.CloseIdleConnections()
		return dialled.Load()
	}
}
