package agent

import (
	"context"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/wharfhub/wharf/providers/edges/protocol"
)

// TestKubeProxyEarlyAnswerWithBodyUnsent: the edge API server (HTTP/2, as
// client-go reaches kube-apiserver) refuses a write without reading its
// body, and the tunnel side (HTTP/1, as the edges provider's transport
// speaks) withholds the rest of the body until it has the whole answer,
// as every hop does once kubectl, over HTTP/2 to the hub, stops sending
// on the 403. The old agent never answered: its transport held the body's
// lock reading the rest, so its HTTP/1 server could not write the 403's
// header. The bound only turns that into a failure.
func TestKubeProxyEarlyAnswerWithBodyUnsent(t *testing.T) {
	edge := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`)
	}))
	edge.EnableHTTP2 = true
	edge.StartTLS()
	t.Cleanup(edge.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: edge.Certificate().Raw})
	cfg := &rest.Config{Host: edge.URL, BearerToken: "agent-own-token", TLSClientConfig: rest.TLSClientConfig{CAData: ca}}

	for _, mode := range []IdentityMode{IdentityImpersonate, IdentityAgent} {
		t.Run(string(mode), func(t *testing.T) {
			h, err := newKubeProxy(cfg, mode, "")
			if err != nil {
				t.Fatal(err)
			}
			front := httptest.NewServer(h)
			t.Cleanup(front.Close)
			for _, method := range []string{http.MethodDelete, http.MethodPatch, http.MethodPost} {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				pr, pw := io.Pipe()
				req, err := http.NewRequestWithContext(ctx, method, front.URL+"/api/v1/nodes/early-answer?dryRun=All", pr)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set(protocol.HeaderEdgeUser, "alice")
				go func() { _, _ = io.WriteString(pw, `{"metadata":`) }() // the rest after the answer
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatalf("%s: %v", method, err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				pw.Close()
				cancel()
				if errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("%s: the agent never ended its %d answer while the body was held back", method, resp.StatusCode)
				}
				if err != nil {
					t.Fatalf("%s: read the answer: %v", method, err)
				}
				if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), `"reason":"Forbidden"`) {
					t.Fatalf("%s: answer %d %s, want the edge's 403", method, resp.StatusCode, body)
				}
			}
		})
	}
}
