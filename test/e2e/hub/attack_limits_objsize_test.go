package hub

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/wharfhub/wharf/hub/fairness"
)

// Issue 24, third outside review, C-B: small requests against a big
// stored object cost one seat each. Mallory stored one ConfigMap of
// 60,000 keys (960 KB) and sent 34-byte merge patches of it, dry run or
// not, 20 at once (attempts 4, 4b, 5, 6), GETs of it 40 at once, with or
// without gzip (7, 13), and 200-operation JSON patches of a 900 KB
// ConfigMap (12): only the body was weighed, each request was one seat,
// and another tenant fell to 1.4–5.9 ops/s while the edges provider's
// lease fence stopped it four times. Now the hub learns the stored size
// of big objects from its storage (hub/objsize) and weighs a get, patch
// or update of one by it: a write at 8 KiB a seat (up to the most one
// write may take, which runs only while nothing else of its tenant's
// writes does), a GET at 64 KiB a seat.
//
// C-I (attempts 2, 3: a chunked 60,000-key body, a 960 KB dry-run merge
// patch) and the attempts that held (1: 60,000-key dry-run POSTs with
// Content-Length; 31: 60 slow 960 KB bodies; 32: gzip-encoded bodies)
// are rows too: they assert what holds.
//
// As in TestAttackLimitsCPU, the rows hold a request in flight
// deterministically (a body that never completes, a read over HTTP/2
// with a one-byte flow window) and assert the seats the hub's flow
// control gives it (apiserver_flowcontrol_current_executing_seats) and
// whom it keeps waiting (429 with Retry-After once the wait is up):
// counts and codes, never times.

// big60kJSON is the review's ConfigMap of 60,000 keys (960,076 bytes).
func big60kJSON(name string) string {
	var b strings.Builder
	b.WriteString(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"},"data":{`)
	for i := range 60000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%05d":"v%03d"`, i, i%1000)
	}
	b.WriteString(`}}`)
	return b.String()
}

// blobJSON is a ConfigMap of one value of n bytes (the review's "amp").
func blobJSON(name string, n int) string {
	return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"},"data":{"a":"` + strings.Repeat("y", n) + `"}}`
}

// jsonPatchCopies is the review's JSON patch: n copies of /data/a.
func jsonPatchCopies(n int) string {
	ops := make([]string, n)
	for i := range ops {
		ops[i] = fmt.Sprintf(`{"op": "copy", "from": "/data/a", "path": "/data/c%d"}`, i)
	}
	return "[" + strings.Join(ops, ", ") + "]"
}

// TestAttackLimitsObjectSize runs rows r24c:1–7, 12, 13, 31 and 32 on one
// hub with the default budgets: 200 mutating and 400 read-only seats
// hub-wide, 20 and 40 per tenant, 50 and 100 for one request at most.
func TestAttackLimitsObjectSize(t *testing.T) {
	t.Parallel()
	e := startReviewFairHub(t)
	const mutatingShare, mostMutating, readShare = 20, 50, 40
	home := "/clusters/{malloryHome}"
	cms := cmPath(home)
	big60k := big60kJSON("big60k")
	// Her big objects, stored once: the 60,000-key ConfigMap and a
	// 900 KB single value. Decoding and validating 60,000 keys takes
	// seconds of CPU: the set-up waits as long as the hub's own request
	// timeout, not the harness client's 10 s.
	slow := *e.h.client()
	slow.Timeout = 0
	for _, s := range []struct{ who, path, body string }{
		{"mallory", cms, big60k},
		{"mallory", cms, blobJSON("amp", 900_000)},
		{"alice", cmPath("/clusters/{aliceHome}"), cmJSON("mine")},
	} {
		req, err := http.NewRequest(http.MethodPost, e.h.URL+expand(s.path, e.vars), strings.NewReader(s.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+e.tokens[s.who])
		req.Header.Set("Content-Type", "application/json")
		resp, err := slow.Do(req)
		if err != nil {
			t.Fatalf("set-up POST %s as %s: %v", s.path, s.who, err)
		}
		body := readAll(resp)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("set-up POST %s as %s: %d %.300s", s.path, s.who, resp.StatusCode, body)
		}
	}
	small := dryRunCM("mallory", home)
	small.want = http.StatusCreated
	// The victim: another tenant's create, get, patch, list and delete,
	// and a hub admin's write in mallory's home. Every one is served.
	victim := func(t *testing.T) {
		t.Helper()
		alice := cmPath("/clusters/{aliceHome}")
		for _, s := range []step{
			{as: "alice", method: http.MethodPost, path: alice, body: cmJSON("victim-{n}"), want: http.StatusCreated},
			{as: "alice", method: http.MethodGet, path: alice + "/victim-{n}", want: http.StatusOK},
			{as: "alice", method: http.MethodPatch, path: alice + "/mine", body: `{"metadata":{"labels":{"x":"{n}"}}}`, want: http.StatusOK},
			{as: "alice", method: http.MethodGet, path: alice, want: http.StatusOK},
			{as: "alice", method: http.MethodDelete, path: alice + "/victim-{n}", want: http.StatusOK},
			{as: "hubadmin", method: http.MethodPost, path: cms + "?dryRun=All", body: cmJSON("during-hubadmin-{n}"), want: http.StatusCreated},
		} {
			if code, body := e.send(s, e.vars); code != s.want {
				t.Fatalf("victim: %s %s as %s: %d, want %d: %.300s", s.method, expand(s.path, e.vars), s.as, code, s.want, body)
			}
		}
	}
	refused := func(t *testing.T, s step) {
		t.Helper()
		if err := tooMany(e, e.vars, s); err != nil {
			t.Fatalf("while the held request holds her share: %.400s", err)
		}
	}
	// quiet waits until nothing of an earlier row executes: a held
	// request whose connection was closed ends a moment later.
	quiet := func(t *testing.T) {
		t.Helper()
		cpuHeld(t, e, "mutating", 0)
		cpuHeld(t, e, "readonly", 0)
	}
	holdPatch := func(t *testing.T, path, ctype string, length int) func() {
		t.Helper()
		c := rawRequest(t, e, "mallory", http.MethodPatch, path, fmt.Sprintf("Content-Type: %s\r\nContent-Length: %d\r\n", ctype, length), "")
		return func() { _ = c.Close() }
	}

	for _, row := range []struct {
		name, path, ctype string
		length            int
	}{
		{"r24c:4/a 34-byte dry-run merge patch of her stored 60,000-key ConfigMap holds the most seats one write may take",
			cms + "/big60k?dryRun=All", "application/merge-patch+json", 34},
		{"r24c:4b/a 34-byte merge patch (not a dry run) of it holds the most seats one write may take",
			cms + "/big60k", "application/merge-patch+json", 34},
		{"r24c:5/a 34-byte merge patch of her stored 900 KB ConfigMap holds the most seats one write may take",
			cms + "/amp", "application/merge-patch+json", 34},
		{"r24c:12/a 200-operation JSON patch (11 KB) of her 900 KB ConfigMap holds the most seats one write may take",
			cms + "/amp?dryRun=All", "application/json-patch+json", len(jsonPatchCopies(200))},
	} {
		t.Run(row.name, func(t *testing.T) {
			quiet(t)
			release := holdPatch(t, row.path, row.ctype, row.length)
			defer release()
			if seats := cpuHeld(t, e, "mutating", 1); seats != mostMutating {
				t.Errorf("the held patch of a big stored object (%d-byte body) holds %d seats, want %d (more than her share of %d: it runs alone)",
					row.length, seats, mostMutating, mutatingShare)
			}
			refused(t, small)
			victim(t)
		})
	}

	t.Run("r24c:4c/a person of another tenant granted edit in her workspace is weighed by the object too", func(t *testing.T) {
		quiet(t)
		rb := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"alice-edit"},` +
			`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},` +
			`"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"alice"}]}`
		if code, body := e.as("mallory", http.MethodPost, home+"/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", rb, e.vars); code != http.StatusCreated {
			t.Fatalf("mallory's RoleBinding for alice: %d %.300s", code, body)
		}
		c := rawRequest(t, e, "alice", http.MethodPatch, cms+"/big60k?dryRun=All", "Content-Type: application/merge-patch+json\r\nContent-Length: 34\r\n", "")
		defer c.Close()
		if seats := cpuHeld(t, e, "mutating", 1); seats != mostMutating {
			t.Errorf("alice's held patch of mallory's big ConfigMap holds %d seats, want %d", seats, mostMutating)
		}
		// Alice's own writes wait for it; mallory's are her own share.
		refused(t, step{as: "alice", method: http.MethodPost, path: cmPath("/clusters/{aliceHome}") + "?dryRun=All", body: cmJSON("probe-{n}")})
		if code, body := e.send(small, e.vars); code != http.StatusCreated {
			t.Errorf("mallory's small write while alice's patch runs: %d %.300s", code, body)
		}
	})

	t.Run("r24c:6/20 tiny merge patches at once while one runs: every one waits, then 429", func(t *testing.T) {
		quiet(t)
		release := holdPatch(t, cms+"/big60k?dryRun=All", "application/merge-patch+json", 34)
		defer release()
		cpuHeld(t, e, "mutating", 1)
		patch := step{as: "mallory", method: http.MethodPatch, path: cms + "/big60k?dryRun=All", body: `{"metadata":{"labels":{"x":"1"}}}`}
		codes := map[int]int{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code := http.StatusTooManyRequests
				if err := tooMany(e, e.vars, patch); err != nil {
					code = -1
					t.Errorf("%.300s", err)
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		if codes[http.StatusTooManyRequests] != 20 {
			t.Errorf("20 tiny patches of her 60,000-key ConfigMap beside a running one: %v, want 20 × 429", codes)
		}
		victim(t)
	})

	for _, row := range []struct {
		name   string
		header map[string]string
	}{
		{"r24c:7/GETs of her stored 60,000-key ConfigMap hold seats by its stored size; past her share, 429", nil},
		{"r24c:13/gzipped GETs of it hold the same seats", map[string]string{"Accept-Encoding": "gzip"}},
	} {
		t.Run(row.name, func(t *testing.T) {
			quiet(t)
			get := home + "/api/v1/namespaces/default/configmaps/big60k"
			release := holdRead(t, e, "mallory", get, row.header)
			defer release()
			// Stored with its metadata (managed fields name every key):
			// at least the 960,076 bytes she sent.
			seats := cpuHeld(t, e, "readonly", 1)
			least := (len(big60k) + fairness.ObjectReadBytesPerSeat - 1) / fairness.ObjectReadBytesPerSeat
			if seats < least || seats > readShare {
				t.Fatalf("the held GET of her 960 KB ConfigMap holds %d seats, want at least %d (64 KiB a seat) and at most her share, %d", seats, least, readShare)
			}
			// As many as her share holds run at once; the next waits,
			// then 429.
			fit := readShare / seats
			for range fit - 1 {
				r := holdRead(t, e, "mallory", get, row.header)
				defer r()
			}
			if got := cpuHeld(t, e, "readonly", fit); got != fit*seats {
				t.Errorf("%d held GETs hold %d seats, want %d", fit, got, fit*seats)
			}
			refused(t, step{as: "mallory", method: http.MethodGet, path: get, header: row.header})
			victim(t)
		})
	}

	// C-I and the attempts that held.
	t.Run("r24c:1/a 60,000-key dry-run POST announcing its length holds the most seats; her next one gets 429", func(t *testing.T) {
		quiet(t)
		c := rawRequest(t, e, "mallory", http.MethodPost, cms+"?dryRun=All", fmt.Sprintf("Content-Type: application/json\r\nContent-Length: %d\r\n", len(big60k)), `{"apiVersion":"v1",`)
		defer c.Close()
		if seats := cpuHeld(t, e, "mutating", 1); seats != mostMutating {
			t.Errorf("the held 960 KB POST holds %d seats, want %d", seats, mostMutating)
		}
		refused(t, step{as: "mallory", method: http.MethodPost, path: cms + "?dryRun=All", body: big60kJSON("big-{n}")})
		victim(t)
	})

	t.Run("r24c:2/a chunked 60,000-key POST holds her whole share; her next write gets 429", func(t *testing.T) {
		quiet(t)
		c := rawRequest(t, e, "mallory", http.MethodPost, cms+"?dryRun=All", "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n", "1\r\n{\r\n")
		defer c.Close()
		if seats := cpuHeld(t, e, "mutating", 1); seats != mutatingShare {
			t.Errorf("the held chunked POST holds %d seats, want her share, %d", seats, mutatingShare)
		}
		refused(t, small)
		victim(t)
	})

	t.Run("r24c:3/a 960 KB dry-run merge patch holds the most seats one write may take", func(t *testing.T) {
		quiet(t)
		release := holdPatch(t, cms+"/big60k?dryRun=All", "application/merge-patch+json", 960_010)
		defer release()
		if seats := cpuHeld(t, e, "mutating", 1); seats != mostMutating {
			t.Errorf("the held 960 KB patch holds %d seats, want %d", seats, mostMutating)
		}
		refused(t, small)
		victim(t)
	})

	t.Run("r24c:31/slow 960 KB bodies beside one that runs: each 429 with Retry-After once the queue wait is up", func(t *testing.T) {
		quiet(t)
		hdr := fmt.Sprintf("Content-Type: application/json\r\nContent-Length: %d\r\n", len(big60k))
		first := rawRequest(t, e, "mallory", http.MethodPost, cms+"?dryRun=All", hdr, `{"apiVersion":"v1",`)
		defer first.Close()
		cpuHeld(t, e, "mutating", 1)
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Add(1)
			c := rawRequest(t, e, "mallory", http.MethodPost, cms+"?dryRun=All", hdr, big60k[:20_000])
			go func() {
				defer wg.Done()
				defer c.Close()
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					t.Errorf("slow body %d: %v", i, err)
					return
				}
				defer resp.Body.Close()
				var st struct{ Kind, Reason string }
				err = json.NewDecoder(resp.Body).Decode(&st)
				if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || err != nil || st.Reason != "TooManyRequests" {
					t.Errorf("slow body %d: %d Retry-After %q %v %+v", i, resp.StatusCode, resp.Header.Get("Retry-After"), err, st)
				}
			}()
		}
		wg.Wait()
		victim(t)
	})

	t.Run("r24c:32/a gzip-encoded request body is refused with 400", func(t *testing.T) {
		quiet(t)
		var zb bytes.Buffer
		zw := gzip.NewWriter(&zb)
		_, _ = zw.Write([]byte(big60kJSON("gz-{n}")))
		_ = zw.Close()
		req, err := http.NewRequest(http.MethodPost, e.h.URL+expand(cms, e.vars)+"?dryRun=All", &zb)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+e.tokens["mallory"])
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Content-Encoding", "gzip")
		resp, err := e.h.client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st struct {
			Kind, Reason string
			Code         int
		}
		if err := json.NewDecoder(resp.Body).Decode(&st); resp.StatusCode != http.StatusBadRequest || err != nil || st.Kind != "Status" || st.Code != http.StatusBadRequest {
			t.Errorf("gzip-encoded POST: %d %v %+v, want a 400 Status", resp.StatusCode, err, st)
		}
		victim(t)
	})

	// Nothing is left in flight.
	cpuHeld(t, e, "mutating", 0)
	cpuHeld(t, e, "readonly", 0)
}
