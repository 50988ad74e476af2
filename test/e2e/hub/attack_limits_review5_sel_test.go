package hub

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Issue 24, fifth outside review (docs/reviews/issue-24-review-5.md):
// huge selectors and huge queries. #18 (broken): 200 watch loops with a
// 20,000-term labelSelector, each retried a second after its 429, plus 4
// writers: kube-apiserver's request-info filter parsed every retry's
// selector before authentication (about 65 ms of CPU each), another
// tenant fell from 349 to 0.4 ops/s and the hub lost the edges lease 3
// times. #16 and #17 (weak): 40 concurrent lists with an 80,000-term
// labelSelector or a 20,000-term fieldSelector, evaluated against every
// object and weighed one seat. #19 (weak): 40 concurrent GETs with a
// 100 KB junk query, whose bytes no budget counted.
//
// The hub runs edges (replicas: single), whose lease losses must stay 0,
// and a small traffic budget (16 MiB burst, 64 KiB/s per CPU), so that
// what a row's tenant is charged shows as 429s rather than as time. Each
// attacker is a tenant of her own; alice, the victim, works meanwhile and
// every one of her requests must succeed. Rows count answers, never
// times.
func TestAttackLimitsReview5Selectors(t *testing.T) {
	t.Parallel()
	leaseRowTurn(t)
	e := startReviewFairHub(t, "--provider", "edges="+providerBinary(t, "./cmd/wharf-provider-edges", "edges"),
		"--tenant-traffic-burst-bytes", "16777216", "--tenant-traffic-bytes-per-cpu", "65536")
	h := e.h
	eventually(t, 90*time.Second, func() error {
		if up, err := providerMetric(t, h, "wharf_provider_up", "edges"); err != nil || up != 1 {
			return fmt.Errorf("edges up %d: %v", up, err)
		}
		return nil
	})
	leaseLosses := func(t *testing.T) {
		t.Helper()
		if n, err := providerMetric(t, h, "wharf_provider_lease_losses_total", "edges"); err != nil || n != 0 {
			t.Errorf("wharf_provider_lease_losses_total{provider=\"edges\"} = %d (%v): the hub missed its lease renewals", n, err)
		}
	}
	limitMsg := func(param string, terms int) string {
		return fmt.Sprintf("%s has %d terms, more than the 1000 terms this server allows", param, terms)
	}

	t.Run("r5:18/watch loops with a 20,000-term labelSelector, retried every second, plus writers: refused 400 unparsed; the victim is served and the lease kept", func(t *testing.T) {
		// Her own child workspace, as the review's.
		child := e.vars["daveHome"] + ":sel"
		if code, body := h.doAs(e.tokens["dave"], http.MethodPost, "/clusters/"+e.vars["daveHome"]+"/apis/tenancy.wharf.dev/v1alpha1/workspaces",
			`{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":"sel"}}`); code != http.StatusCreated {
			t.Fatalf("dave creates %s: %d %s", child, code, body)
		}
		eventually(t, 60*time.Second, func() error {
			if code, body := h.doAs(e.tokens["dave"], http.MethodGet, cmPath("/clusters/"+child), ""); code != http.StatusOK {
				return fmt.Errorf("dave lists in %s: %d %.200s", child, code, body)
			}
			return nil
		})
		const loops, writers, terms = 100, 4, 20000
		watch := h.URL + "/clusters/" + child + "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=600&labelSelector=" + url.QueryEscape(labelSelector(terms))
		cl := r5Client(h, 0)
		closed0 := h2Closures(t, e)
		ctx, stop := context.WithCancel(context.Background())
		got, bodies := &codes{}, &firstBodies{}
		var wg sync.WaitGroup
		for range loops {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, watch, nil)
					req.Header.Set("Authorization", "Bearer "+e.tokens["dave"])
					resp, err := cl.Do(req)
					if err != nil {
						if ctx.Err() == nil {
							got.add("ERR")
						}
					} else {
						// An open watch is read until the row ends.
						b, err := io.ReadAll(resp.Body)
						resp.Body.Close()
						switch {
						case err != nil && ctx.Err() == nil:
							// The connection went mid-answer (the
							// guard closed it for another request's
							// head): no answer to judge.
							got.add("ERR")
						case err == nil:
							key := r5Answer(resp)
							got.add(key)
							bodies.note(key, string(b))
						}
					}
					select {
					case <-ctx.Done():
					case <-time.After(time.Second):
					}
				}
			}()
		}
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				base := cmPath(h.URL + "/clusters/" + child)
				for i := 0; ctx.Err() == nil; i++ {
					name := fmt.Sprintf("w%d-%d", w, i)
					r5Do(ctx, cl, http.MethodPost, base, e.tokens["dave"], cmJSON(name))
					r5Do(ctx, cl, http.MethodDelete, base+"/"+name, e.tokens["dave"], "")
				}
			}()
		}
		// The victim's operations must all succeed; the flood stops when
		// she is done, or, on a hub the flood starves, after a bound that
		// is no measure (her unfinished operations are failures).
		vctx, vstop := context.WithTimeout(ctx, 90*time.Second)
		// She starts once every loop has been answered at least once (the
		// flood is under way), and the flood runs on until the loops have
		// retried twice more.
		r5AtLeast(vctx, got, loops)
		victim := r5SelVictim(vctx, e, "r518", 160)
		r5AtLeast(vctx, got, 3*loops)
		vstop()
		stop()
		wg.Wait()
		t.Logf("dave's watches: %s", got)
		if len(victim) != 0 {
			t.Errorf("the victim had %d failures: %s", len(victim), strings.Join(victim, "; "))
		}
		r5GuardClosed(t, e, got, closed0)
		r5Refusals(t, got, bodies, limitMsg("labelSelector", terms+1))
		leaseLosses(t)
	})

	t.Run("r5:16/concurrent lists with an 80,000-term labelSelector: 400 naming the limit; at the limit a list is served and its evaluation charged", func(t *testing.T) {
		const workers, each, terms = 40, 2, 80000
		r5Objects(t, e, e.vars["malloryHome"], 600)
		list := cmPath(h.URL+"/clusters/"+e.vars["malloryHome"]) + "?labelSelector=" + url.QueryEscape(labelSelector(terms))
		victimDone := r4Victim(e, "r516", 120)
		closed0 := h2Closures(t, e)
		got, bodies := r5FloodOwn(h, workers, each, list, e.tokens["mallory"])
		victim := <-victimDone
		t.Logf("mallory's lists: %s", got)
		r5GuardClosed(t, e, got, closed0)
		if len(victim) != 0 {
			t.Errorf("the victim had %d failures: %s", len(victim), strings.Join(victim, "; "))
		}
		r5Refusals(t, got, bodies, limitMsg("labelSelector", terms+1))
		leaseLosses(t)

		// At the limit: served, and what it evaluates (1,000 terms × 600
		// objects) and parses is charged, so grace's budget runs out.
		r5Objects(t, e, e.vars["graceHome"], 600)
		atLimit := cmPath("/clusters/"+e.vars["graceHome"]) + "?labelSelector=" + url.QueryEscape(labelSelector(999))
		served, refused := 0, 0
		for range 12 {
			code, body := h.doAs(e.tokens["grace"], http.MethodGet, atLimit, "")
			switch {
			case code == http.StatusOK && strings.Contains(body, `"items": []`) || code == http.StatusOK && strings.Contains(body, `"items":[]`):
				served++
			case code == http.StatusTooManyRequests:
				refused++
			default:
				t.Errorf("grace's 1,000-term list: %d %.300s", code, body)
			}
		}
		if served == 0 || refused == 0 {
			t.Errorf("grace's 12 lists of 1,000 terms over 600 objects: %d served, %d refused: the evaluation must be served and charged", served, refused)
		}
		// Ordinary selectors, by the real kubectl, are unaffected.
		out := h.mustKubectl(e.vars["graceHome"], "get", "configmaps", "-l", "app=r5,tier!=cache,size in (s,m)", "--field-selector", "metadata.name=r5-7", "-o", "name")
		if out != "configmap/r5-7" {
			t.Errorf("kubectl get -l ... --field-selector ...: %q, want configmap/r5-7", out)
		}
	})

	t.Run("r5:17/concurrent lists with a 20,000-term fieldSelector: 400 naming the limit", func(t *testing.T) {
		const workers, each, terms = 40, 2, 20000
		parts := make([]string, terms)
		for i := range parts {
			parts[i] = fmt.Sprintf("metadata.name!=x%d", i)
		}
		list := cmPath(h.URL+"/clusters/"+e.vars["carolHome"]) + "?fieldSelector=" + url.QueryEscape(strings.Join(parts, ","))
		victimDone := r4Victim(e, "r517", 120)
		closed0 := h2Closures(t, e)
		got, bodies := r5FloodOwn(h, workers, each, list, e.tokens["carol"])
		victim := <-victimDone
		t.Logf("carol's lists: %s", got)
		r5GuardClosed(t, e, got, closed0)
		if len(victim) != 0 {
			t.Errorf("the victim had %d failures: %s", len(victim), strings.Join(victim, "; "))
		}
		r5Refusals(t, got, bodies, limitMsg("fieldSelector", terms))
		leaseLosses(t)
	})

	t.Run("r5:19/concurrent GETs with a 100 KB junk query: its bytes are charged to the tenant's traffic budget", func(t *testing.T) {
		const workers, each = 40, 3
		get := h.URL + "/version?junk=" + strings.Repeat("x", 100<<10)
		victimDone := r4Victim(e, "r519", 120)
		closed0 := h2Closures(t, e)
		got, _ := r5Flood(h, workers, each, get, e.tokens["erin"])
		victim := <-victimDone
		t.Logf("erin's GETs: %s", got)
		guarded := r5GuardClosed(t, e, got, closed0)
		if len(victim) != 0 {
			t.Errorf("the victim had %d failures: %s", len(victim), strings.Join(victim, "; "))
		}
		// 120 heads of 100 KB are far past a 16 MiB budget (at 4 bytes a
		// byte past 4 KiB, about 40 fit): the rest wait, then 429. On one
		// shared HTTP/2 connection they are also past its header budget
		// (hub/h2guard, 512 KiB a second): the guard may close it first,
		// and then the client's next connection starts again.
		if got.get("200") == 0 || got.get("429") == 0 && !guarded {
			t.Errorf("erin's GETs: %s: the first must be served, the rest refused once her budget is spent", got)
		}
		for k, n := range got.snapshot() {
			if k != "200" && k != "429" {
				t.Errorf("erin's GETs: %d answers %q", n, k)
			}
		}
		leaseLosses(t)
	})
}

// r5SelVictim is r4Victim's n operations, stopped when ctx ends: each
// operation not done then is a failure.
func r5SelVictim(ctx context.Context, e *attackEnv, tag string, n int) []string {
	var failed []string
	ws := "/clusters/" + e.vars["aliceHome"]
	for i := 0; i < n; i++ {
		if ctx.Err() != nil {
			return append(failed, fmt.Sprintf("stopped after %d of %d operations", i, n))
		}
		name := fmt.Sprintf("victim-%s-%d", tag, i/4)
		s := []step{
			{as: "alice", method: http.MethodPost, path: cmPath(ws), body: cmJSON(name), want: http.StatusCreated},
			{as: "alice", method: http.MethodGet, path: cmPath(ws) + "/" + name, want: http.StatusOK},
			{as: "alice", method: http.MethodGet, path: cmPath(ws) + "?limit=50", want: http.StatusOK},
			{as: "alice", method: http.MethodDelete, path: cmPath(ws) + "/" + name, want: http.StatusOK},
		}[i%4]
		if code, body := e.send(s, e.vars); code != s.want {
			failed = append(failed, fmt.Sprintf("%s %s: %d %.200s", s.method, s.path, code, body))
		}
	}
	return failed
}

// r5AtLeast waits until got has counted n answers, or ctx ends.
func r5AtLeast(ctx context.Context, got *codes, n int) {
	for ctx.Err() == nil {
		total := 0
		for _, k := range got.snapshot() {
			total += k
		}
		if total >= n {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// labelSelector is the review's: n terms "!k<i>" that every object
// passes, then one it fails, so every term is evaluated.
func labelSelector(n int) string {
	parts := make([]string, 0, n+1)
	for i := range n {
		parts = append(parts, fmt.Sprintf("!k%d", i))
	}
	return strings.Join(append(parts, "zzz=1"), ",")
}

// r5Client is an HTTP/2 client trusting the hub, as the review's load
// generator (one shared transport); timeout 0 means none.
func r5Client(h *hubProc, timeout time.Duration) *http.Client {
	tr := h.client().Transport.(*http.Transport).Clone()
	tr.ForceAttemptHTTP2 = true
	tr.MaxIdleConnsPerHost = 200
	tr.TLSClientConfig = tr.TLSClientConfig.Clone()
	tr.TLSClientConfig.MinVersion = tls.VersionTLS12
	return &http.Client{Transport: tr, Timeout: timeout}
}

// r5Answer counts a flood's answer: its status, "429 without
// Retry-After" for a refusal that lacks it.
func r5Answer(resp *http.Response) string {
	if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
		return "429 without Retry-After"
	}
	return fmt.Sprint(resp.StatusCode)
}

// r5Do sends one request and discards its answer.
func r5Do(ctx context.Context, cl *http.Client, method, u, token, body string) {
	req, _ := http.NewRequestWithContext(ctx, method, u, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if resp, err := cl.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// r5Flood sends GET u as token from workers, each times, at once, and
// counts the answers, keeping the first body of each kind.
func r5Flood(h *hubProc, workers, each int, u, token string) (*codes, *firstBodies) {
	cl := r5Client(h, 60*time.Second)
	return r5FloodWith(func(int) *http.Client { return cl }, workers, each, u, token)
}

// r5FloodOwn is r5Flood with a connection of each worker's own: a head
// of ~700 KB is past a shared connection's header budget (hub/h2guard)
// after the first, and the guard closed every shared connection before
// the server had answered any head (r5:16 in make test: ERR:80, no 400);
// a worker's fresh connection always pays its first.
func r5FloodOwn(h *hubProc, workers, each int, u, token string) (*codes, *firstBodies) {
	return r5FloodWith(func(int) *http.Client { return r5Client(h, 60*time.Second) }, workers, each, u, token)
}

func r5FloodWith(client func(int) *http.Client, workers, each int, u, token string) (*codes, *firstBodies) {
	bodies := &firstBodies{}
	got := flood(workers, each, client, func(cl *http.Client, _, _ int, got *codes) {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := cl.Do(req)
		if err != nil {
			got.add("ERR")
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			// The connection went mid-answer: no answer to judge.
			got.add("ERR")
			return
		}
		key := r5Answer(resp)
		got.add(key)
		bodies.note(key, string(b))
	})
	return got, bodies
}

// r5Refusals fails unless every answer was a 400 BadRequest Status whose
// message names the limit or a 429 with Retry-After (the tenant's budget,
// charged with what the refused heads weighed), and some were 400s.
// r5GuardClosed takes the flood's failed requests ("ERR") out of got when
// the HTTP/2 guard closed connections for their header bytes meanwhile
// (hub/h2guard, sixth review #1-#2): a flood of heads of 100 KB to 1 MB on
// one shared connection is past its budget, and the guard closes it
// before the server decodes more; the requests answered before are still
// checked. It reports whether the guard closed any.
func r5GuardClosed(t *testing.T, e *attackEnv, got *codes, before map[string]float64) bool {
	t.Helper()
	after := h2Closures(t, e)
	closed := after["header-bytes"] - before["header-bytes"] + after["frames"] - before["frames"]
	if closed <= 0 {
		return false
	}
	got.mu.Lock()
	defer got.mu.Unlock()
	t.Logf("the HTTP/2 guard closed %v of the flood's connections; %d requests failed with them", closed, got.n["ERR"])
	delete(got.n, "ERR")
	return true
}

func r5Refusals(t *testing.T, got *codes, bodies *firstBodies, msg string) {
	t.Helper()
	for k, n := range got.snapshot() {
		if k != "400" && k != "429" {
			t.Errorf("%d answers %q (%.300s)", n, k, bodies.get(k))
		}
	}
	if got.get("400") == 0 {
		t.Errorf("no 400 BadRequest: %s", got)
		return
	}
	var st struct {
		Kind, Status, Message, Reason string
		Code                          int
	}
	b := bodies.get("400")
	if err := json.Unmarshal([]byte(b), &st); err != nil || st.Kind != "Status" || st.Reason != "BadRequest" || st.Code != 400 || st.Message != msg {
		t.Errorf("the 400 is not a BadRequest Status saying %q: %.400s", msg, b)
	}
}

// r5Objects creates n labelled ConfigMaps r5-<i> in ws as the hub's
// admin (exempt from tenant limits, so the tenant's budget is untouched).
func r5Objects(t *testing.T, e *attackEnv, ws string, n int) {
	t.Helper()
	cl := r5Client(e.h, 30*time.Second)
	base := cmPath(e.h.URL + "/clusters/" + ws)
	got := flood(8, n/8, func(int) *http.Client { return cl }, func(cl *http.Client, w, i int, got *codes) {
		name := fmt.Sprintf("r5-%d", w*(n/8)+i)
		body := fmt.Sprintf(`{"metadata":{"name":%q,"labels":{"app":"r5","tier":"web","size":"m"}}}`, name)
		// A connection the hub closed under the load (an older hub's
		// HTTP/2 guard did so) is dialled again: 409 then means done.
		for attempt := 1; ; attempt++ {
			req, _ := http.NewRequest(http.MethodPost, base, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+e.tokens["hubadmin"])
			req.Header.Set("Content-Type", "application/json")
			resp, err := cl.Do(req)
			if err != nil {
				if attempt < 3 {
					continue
				}
				got.add("ERR")
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			got.add(fmt.Sprint(resp.StatusCode))
			return
		}
	})
	if got.get("201")+got.get("409") != n/8*8 {
		t.Fatalf("creating %d ConfigMaps in %s: %s", n, ws, got)
	}
}

// firstBodies keeps the first body answered for each kind of answer.
type firstBodies struct {
	mu sync.Mutex
	m  map[string]string
}

func (f *firstBodies) note(key, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]string{}
	}
	if _, ok := f.m[key]; !ok {
		f.m[key] = body
	}
}

func (f *firstBodies) get(key string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m[key]
}

// snapshot copies the counts.
func (c *codes) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.n))
	for k, v := range c.n {
		out[k] = v
	}
	return out
}
