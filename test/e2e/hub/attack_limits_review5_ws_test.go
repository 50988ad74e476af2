package hub

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Issue 24, fifth outside review (docs/reviews/issue-24-review-5.md),
// break 12 and weak attempt 24: a tenant's workspaces.
//
// r5:12: the usage ledger wrote all of a tenant's records (one per
// workspace, and the tenant's) in one etcd transaction, and etcd refuses
// one of more than --max-txn-ops (128) operations: from the tenant's
// ~127th workspace on, every write of hers that needed the ledger
// answered 500 "updating stored usage: etcdserver: too many operations
// in txn request", though the README promises 250 (--max-tenant-workspaces).
// The row fills a tenant to the promised ceiling and asks for one more.
//
// r5:24: 20 workers creating and deleting workspaces in one tenant while
// another tenant works. The row counts answers, never times.

// r5TenantWorkspaces is the tenant ceiling r5:12 fills: the default of
// --max-tenant-workspaces (250), or WHARF_R5_TENANT_WORKSPACES (which must
// stay well above 128 for the row to mean anything).
func r5TenantWorkspaces(t *testing.T) int {
	if v := os.Getenv("WHARF_R5_TENANT_WORKSPACES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 140 {
			t.Fatalf("WHARF_R5_TENANT_WORKSPACES=%q: want a number of at least 140", v)
		}
		return n
	}
	return 250
}

// r5Create asks for workspace name under parent as who, sending again
// after a 429 (her share of the hub, not what the row tests), and returns
// the final answer.
func r5Create(e *attackEnv, who, parent, name string) (int, string) {
	for {
		code, body := e.req(who, http.MethodPost, "/clusters/"+parent+wsAPI, "", childWS(name))
		if code != http.StatusTooManyRequests {
			return code, body
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// r5WriteIn creates a ConfigMap in ws as who once the new workspace
// serves it (its namespaces are made by the hub after the create): until
// then, and after a 429, it asks again. A 5xx, or no success within a
// minute, is the answer.
func r5WriteIn(e *attackEnv, who, ws string) (int, string) {
	deadline := time.Now().Add(time.Minute)
	for {
		code, body := e.req(who, http.MethodPost, cmPath("/clusters/"+ws), "", cmJSON("r5-first"))
		if code == http.StatusCreated || code >= 500 || time.Now().After(deadline) {
			return code, body
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestAttackLimitsReview5Workspaces(t *testing.T) {
	t.Parallel()
	limit := r5TenantWorkspaces(t)
	e := startReviewFairHub(t, fmt.Sprintf("--max-tenant-workspaces=%d", limit))

	t.Run("r5:12", func(t *testing.T) {
		home := e.vars["malloryHome"]
		// --max-child-workspaces is 100: the tree is her home's 100
		// children, then 100 under each of the first ones, in order.
		const perParent = 100
		parentOf := func(i int) string {
			if i < perParent {
				return home
			}
			return fmt.Sprintf("%s:c%03d", home, i/perParent-1)
		}
		got := &codes{}
		var bad []string
		var mu sync.Mutex
		next := 0
		var wg sync.WaitGroup
		// Four at a time (the review created them one by one; the
		// count, not the pace, is what broke).
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					mu.Lock()
					i := next
					next++
					stop := i >= limit || len(bad) >= 5
					mu.Unlock()
					if stop {
						return
					}
					name := fmt.Sprintf("c%03d", i%perParent)
					code, body := r5Create(e, "mallory", parentOf(i), name)
					got.add(fmt.Sprint(code))
					if code == http.StatusCreated {
						// A write in it, as the review's bound a
						// role in each: its records join the
						// tenant's.
						code, body = r5WriteIn(e, "mallory", parentOf(i)+":"+name)
						got.add(fmt.Sprintf("cm-%d", code))
					}
					if code != http.StatusCreated {
						mu.Lock()
						bad = append(bad, fmt.Sprintf("workspace %d: %d %.300s", i+1, code, body))
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		t.Logf("r5:12: %d workspaces asked for: %s", limit, got)
		if len(bad) > 0 {
			t.Fatalf("creates up to the tenant's ceiling of %d failed:\n%s", limit, strings.Join(bad, "\n"))
		}
		// The one past the ceiling: kube's quota refusal, not a 500.
		code, body := r5Create(e, "mallory", parentOf(limit-1), "one-more")
		if code != http.StatusForbidden || !strings.Contains(body, "exceeded quota: wharf-tenant-limits") ||
			!strings.Contains(body, fmt.Sprintf("limited: count/workspaces.tenancy.wharf.dev=%d", limit)) {
			t.Errorf("workspace %d: %d %.400s; want 403 exceeded quota: wharf-tenant-limits", limit+1, code, body)
		}
		// Her other writes keep working, in her home and in her
		// workspaces.
		var failed []string
		for i := 0; i < 30; i++ {
			ws := []string{home, home + ":c000", home + ":c000:c050"}[i%3]
			name := fmt.Sprintf("r5-12-%d", i)
			if code, body := e.req("mallory", http.MethodPost, cmPath("/clusters/"+ws), "", cmJSON(name)); code != http.StatusCreated && code != http.StatusTooManyRequests {
				failed = append(failed, fmt.Sprintf("configmap %s in %s: %d %.300s", name, ws, code, body))
			}
		}
		if len(failed) > 0 {
			t.Errorf("her ConfigMap creates at the ceiling:\n%s", strings.Join(failed, "\n"))
		}
	})

	t.Run("r5:24", func(t *testing.T) {
		// dave churns workspaces in a child of his home, 20 workers each
		// creating one and deleting it at once; alice, another tenant,
		// works meanwhile: ConfigMaps in her home, and a workspace of
		// her own made ready and deleted.
		parent := e.vars["daveHome"] + ":churn"
		e.mustReq(t, http.StatusCreated, "", "dave", http.MethodPost, "/clusters/{daveHome}"+wsAPI, "", childWS("churn"))
		const workers, each = 20, 4
		churned := make(chan *codes, 1)
		go func() {
			churned <- flood(workers, each, func(int) *http.Client { return e.h.client() }, func(_ *http.Client, w, i int, got *codes) {
				name := fmt.Sprintf("w%d-%d", w, i)
				code, body := e.req("dave", http.MethodPost, "/clusters/"+parent+wsAPI, "", childWS(name))
				got.add(r5ChurnAnswer("create", code, body))
				code, body = e.req("dave", http.MethodDelete, "/clusters/"+parent+wsAPI+"/"+name, "", "")
				got.add(r5ChurnAnswer("delete", code, body))
			})
		}()
		victim := r4Victim(e, "r5-24", 200)
		var failed []string
		ws := "r5-24-" + e.vars["n"]
		if code, body := e.req("alice", http.MethodPost, "/clusters/{aliceHome}"+wsAPI, "", childWS(ws)); code != http.StatusCreated {
			failed = append(failed, fmt.Sprintf("alice's workspace create: %d %.300s", code, body))
		} else {
			eventually(t, 2*time.Minute, func() error {
				if code, body := e.req("alice", http.MethodGet, "/clusters/{aliceHome}"+wsAPI+"/"+ws, "", ""); code != http.StatusOK || !strings.Contains(strings.ReplaceAll(body, " ", ""), `"phase":"Ready"`) {
					return fmt.Errorf("alice's workspace not ready: %d %.200s", code, body)
				}
				return nil
			})
			if code, body := e.req("alice", http.MethodDelete, "/clusters/{aliceHome}"+wsAPI+"/"+ws, "", ""); code != http.StatusOK && code != http.StatusAccepted {
				failed = append(failed, fmt.Sprintf("alice's workspace delete: %d %.300s", code, body))
			}
		}
		failed = append(failed, <-victim...)
		got := <-churned
		t.Logf("r5:24: dave's churn %s; alice %d failures", got, len(failed))
		if len(failed) > 0 {
			t.Errorf("alice, during dave's workspace churn:\n%s", strings.Join(failed, "\n"))
		}
		got.mu.Lock()
		defer got.mu.Unlock()
		for k, n := range got.n {
			if strings.HasPrefix(k, "unexpected") {
				t.Errorf("dave's churn: %d answers %s", n, k)
			}
		}
	})
}

// r5ChurnAnswer classifies an answer to the churn: the ones a tenant may
// get (created, deleted, gone already after a refused create, her quota's
// 403, her share's 429) by code, anything else (a 5xx above all) as
// unexpected.
func r5ChurnAnswer(verb string, code int, body string) string {
	switch {
	case verb == "create" && code == http.StatusCreated,
		verb == "delete" && (code == http.StatusOK || code == http.StatusAccepted || code == http.StatusNotFound),
		code == http.StatusTooManyRequests,
		code == http.StatusForbidden && strings.Contains(body, "exceeded quota"):
		return fmt.Sprintf("%s %d", verb, code)
	}
	return fmt.Sprintf("unexpected %s %d %.200s", verb, code, body)
}
