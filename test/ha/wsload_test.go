package ha

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// wsLoad creates workspaces one after another through the load balancer,
// each sent once: their index writes go to etcd directly, not through the
// k8s storage, so this checks that those survive an etcd member loss too.
// At this rate (about one create per 0.6 s) it is a check, not a proof:
// on 2026-12-01 it also passed with the index's retries removed, as no
// create's index write happened to meet the election. The ambiguous
// cases are covered by hub/etcd TestWriter and hub/workspaces
// TestIndexSurvivesAmbiguousFailures.
type wsLoad struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex // guards the fields below
	acked  []string
	errors []string
}

func (b *bed) startWorkspaceLoad(t *testing.T, prefix string) *wsLoad {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	w := &wsLoad{cancel: cancel, done: make(chan struct{})}
	hc := b.httpClient()
	go func() {
		defer close(w.done)
		for i := 0; ctx.Err() == nil; i++ {
			name := fmt.Sprintf("%s-%d", prefix, i)
			body := fmt.Sprintf(`{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":%q}}`, name)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.lb.URL+"/clusters/root/apis/tenancy.wharf.dev/v1alpha1/workspaces", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+loadToken)
			req.Header.Set("Content-Type", "application/json")
			resp, err := hc.Do(req)
			if ctx.Err() != nil {
				return
			}
			w.mu.Lock()
			switch {
			case err != nil:
				w.errors = append(w.errors, fmt.Sprintf("%s: %v", name, err))
			case resp.StatusCode != http.StatusCreated:
				msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
				w.errors = append(w.errors, fmt.Sprintf("%s: %s %s", name, resp.Status, msg))
			default:
				w.acked = append(w.acked, name)
			}
			w.mu.Unlock()
			if resp != nil {
				_ = resp.Body.Close()
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return w
}

// check stops the load, fails on any client error, and checks that every
// acknowledged workspace serves its default namespace.
func (w *wsLoad) check(t *testing.T, b *bed, role string) {
	t.Helper()
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	record(t, "workspace creates acknowledged losing the etcd "+role, len(w.acked))
	record(t, "workspace create errors losing the etcd "+role, len(w.errors))
	if len(w.errors) > 0 {
		t.Errorf("%d workspace create errors losing the etcd %s, want 0: %v", len(w.errors), role, w.errors[:min(len(w.errors), 5)])
	}
	if len(w.acked) == 0 {
		t.Error("no workspace create was acknowledged: the load did not run")
	}
	hc := b.httpClient()
	for _, name := range w.acked {
		if err := retryHTTP(hc, http.MethodGet, b.hubs[0].URL+"/clusters/root:"+name+"/api/v1/namespaces/default", "", http.StatusOK); err != nil {
			t.Errorf("acknowledged workspace %s: %v", name, err)
		}
	}
}
