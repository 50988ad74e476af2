package hub

import (
	"fmt"
	"net/http"
	"strings"
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
		path := fmt.Sprintf("/clusters/%s/api/v1/namespaces/default/events", e.vars["malloryHome"])
		codes, wait := floodKeptAlive(h, workers, each, func(w, i int) *http.Request {
			body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Event","metadata":{"name":"flood-%d-%d"},"involvedObject":{"kind":"ConfigMap","namespace":"default","name":"x"},"reason":"Flood","message":"m","type":"Normal"}`, w, i)
			req, _ := http.NewRequest(http.MethodPost, h.URL+path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+e.tokens["mallory"])
			req.Header.Set("Content-Type", "application/json")
			return req
		}, func(resp *http.Response, b []byte) string {
			if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(b), "limit reached on type") {
				return fmt.Sprint(resp.StatusCode)
			}
			if resp.Close {
				return "429 event limit+close"
			}
			return "429 event limit"
		})
		// The victim, in her own tenant, writes events meanwhile.
		failed := 0
		for i := 0; i < 10; i++ {
			body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Event","metadata":{"name":"fine-%d"},"involvedObject":{"kind":"ConfigMap","namespace":"default","name":"x"},"reason":"Fine","message":"m","type":"Normal"}`, i)
			if code, b := h.doAs(e.tokens["alice"], http.MethodPost, fmt.Sprintf("/clusters/%s/api/v1/namespaces/default/events", e.vars["aliceHome"]), body); code != http.StatusCreated {
				failed++
				t.Logf("alice: %d %s", code, b)
			}
		}
		newConns := wait()
		t.Logf("mallory: %v, %d new connections for %d workers", codes, newConns, workers)
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
		if n := newConns; n < int64(refused) {
			t.Errorf("%d new connections for %d workers and %d event-limit 429s: each must cost a reconnect", n, workers, refused)
		}
	})
}
