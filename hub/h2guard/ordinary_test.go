package h2guard

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
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
