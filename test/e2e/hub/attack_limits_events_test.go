package hub

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Issue 24, fourth outside review, attempt 11: an event flood past the
// event rate (upstream EventRateLimit-style admission, hub/quota) got
// 1,476 429s a second, each answered at once on the same kept-alive
// connection. Now the event rate's 429 closes its connection as every
// refusal not held does, so each costs the flooder a new, metered TLS
// handshake; another tenant's events are still written. The row counts
// answers and connections, never times.
func TestAttackLimitsEvents(t *testing.T) {
	e := startReviewFairHub(t)
	h := e.h

	t.Run("r24d:11/an event flood past the rate: each event-limit 429 closes its connection; another tenant's events are written", func(t *testing.T) {
		// The workspace's burst is 100 events: 4 workers of 60 each
		// overrun it several times over.
		const workers, each = 4, 60
		var newConns atomic.Int64
		tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, MaxIdleConnsPerHost: workers}
		defer tr.CloseIdleConnections()
		cl := &http.Client{Transport: tr}
		// Counted as dialled: a connection dialled for one request may
		// serve another first, and then looks reused to both.
		trace := &httptrace.ClientTrace{ConnectDone: func(_, _ string, err error) {
			if err == nil {
				newConns.Add(1)
			}
		}}
		path := fmt.Sprintf("/clusters/%s/api/v1/namespaces/default/events", e.vars["malloryHome"])
		var mu sync.Mutex
		codes := map[string]int{}
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < each; i++ {
					body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Event","metadata":{"name":"flood-%d-%d"},"involvedObject":{"kind":"ConfigMap","namespace":"default","name":"x"},"reason":"Flood","message":"m","type":"Normal"}`, w, i)
					req, _ := http.NewRequest(http.MethodPost, h.URL+path, strings.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+e.tokens["mallory"])
					req.Header.Set("Content-Type", "application/json")
					req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
					resp, err := cl.Do(req)
					key := "ERR"
					if err == nil {
						b, _ := io.ReadAll(resp.Body)
						resp.Body.Close()
						key = fmt.Sprint(resp.StatusCode)
						if resp.StatusCode == http.StatusTooManyRequests && strings.Contains(string(b), "limit reached on type") {
							key = "429 event limit"
							if resp.Close {
								key = "429 event limit+close"
							}
						}
					}
					mu.Lock()
					codes[key]++
					mu.Unlock()
				}
			}()
		}
		// The victim, in her own tenant, writes events meanwhile.
		failed := 0
		for i := 0; i < 10; i++ {
			body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Event","metadata":{"name":"fine-%d"},"involvedObject":{"kind":"ConfigMap","namespace":"default","name":"x"},"reason":"Fine","message":"m","type":"Normal"}`, i)
			if code, b := h.doAs(e.tokens["alice"], http.MethodPost, fmt.Sprintf("/clusters/%s/api/v1/namespaces/default/events", e.vars["aliceHome"]), body); code != http.StatusCreated {
				failed++
				t.Logf("alice: %d %s", code, b)
			}
		}
		wg.Wait()
		t.Logf("mallory: %v, %d new connections for %d workers", codes, newConns.Load(), workers)
		if failed > 0 {
			t.Errorf("alice: %d of 10 events not written", failed)
		}
		refused := codes["429 event limit"] + codes["429 event limit+close"]
		if refused == 0 {
			t.Fatalf("no event-limit 429 in the flood: %v", codes)
		}
		if codes["429 event limit"] > 0 {
			t.Errorf("%d of %d event-limit 429s kept their connection open", codes["429 event limit"], refused)
		}
		// Each refusal but a worker's last makes it dial again.
		if n := newConns.Load(); n < int64(refused) {
			t.Errorf("%d new connections for %d workers and %d event-limit 429s: each must cost a reconnect", n, workers, refused)
		}
	})
}
