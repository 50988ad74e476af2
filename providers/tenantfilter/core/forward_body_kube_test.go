package core_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/providers/tenantfilter/core"
)

// TestForwardEarlyAnswerWithBodyUnsent: a client still sending its request
// body when the downstream's 403 reaches it stops sending (Go's HTTP/2
// client, hence kubectl, does so for any status above 299) and waits for
// the end of the answer. The filter must end it. The old forwarder did
// not: closing the downstream response waited for its transport to finish
// reading the client's body, which never came, so `kubectl delete node X
// --dry-run=server` without a delete grant hung until kubectl was killed.
//
// The client here withholds the end of its body until it has read the
// whole answer, so the old forwarder deadlocks on every run, whatever the
// machine's load (under load kubectl was merely slow enough to hit it).
func TestForwardEarlyAnswerWithBodyUnsent(t *testing.T) {
	e := startEnv(t)
	f := e.startFilter(t, core.Options{})
	srv := httptest.NewUnstartedServer(f.front)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)

	cases := []struct {
		name, method, path string
	}{
		{"delete a node, dry run", http.MethodDelete, "/api/v1/nodes/early-answer?dryRun=All"},
		{"patch a node", http.MethodPatch, "/api/v1/nodes/early-answer"},
		{"create a configmap", http.MethodPost, "/api/v1/namespaces/default/configmaps"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The bound only turns the old deadlock into a failure; a
			// working filter answers in milliseconds.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			pr, pw := io.Pipe()
			defer pw.Close()
			req, err := http.NewRequestWithContext(ctx, tc.method, srv.URL+tc.path, pr)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/merge-patch+json")
			req.Header.Set("X-Test-User", "early-answer-nobody") // no RBAC at all: 403
			go func() {
				// Part of the body; the rest only after the answer.
				_, _ = io.WriteString(pw, `{"metadata":`)
			}()
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", tc.method, tc.path, err)
			}
			defer resp.Body.Close()
			if resp.ProtoMajor != 2 {
				t.Fatalf("answered over %s, want HTTP/2", resp.Proto)
			}
			body, err := io.ReadAll(resp.Body)
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("the filter never ended its %d answer while the client held back the rest of its body", resp.StatusCode)
			}
			if err != nil {
				t.Fatalf("read the answer: %v", err)
			}
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), `"reason":"Forbidden"`) {
				t.Fatalf("answer %d %s, want kube-apiserver's 403", resp.StatusCode, body)
			}
		})
	}
}
