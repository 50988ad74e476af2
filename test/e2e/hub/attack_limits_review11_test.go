package hub

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// Issue 24, eleventh outside review (docs/reviews/issue-24-review-11.md),
// E1-E3, E5: mallory stores about 100 MiB of ConfigMaps in her home,
// notes a resourceVersion, and keeps 2 to 20 lists in flight at that
// version exactly (resourceVersionMatch=Exact), asking for a Table or with
// a selector nothing matches. The watch cache no longer holds that
// version, so each list reads and decodes every value of hers from etcd,
// yet answers 53 kB (or 117 B): another tenant fell from 533 to 11 ops/s,
// the hub grew to 11 GiB. The size the hub learned from such an answer
// made each list one seat; now what a list read from etcd weighs it, and
// lists that may be read from etcd learn apart from the others and only
// raise (hub/fairness Estimator, hub/selectors Scan).
//
// The row, scaled down: the hub's admin stores 12 ConfigMaps of 1 MiB in
// mallory's home; the hub restarts, so its watch cache begins after the
// version noted; mallory lists at that version once (the hub learns the
// list's size), then sends 80 such lists at once on one HTTP/2
// connection, 3 rounds, while alice works. Outcomes, never times: alice's
// operations all succeed, every answer mallory gets is 200 or 429 with
// Retry-After, and her second list alone is at least 32 seats wide
// (wharf_fairness_request_seats; 12 MiB read at 256 KiB a seat), so that
// such lists run one at a time. On 011632e it was one seat: the size
// learned from its Table answer.
func TestAttackLimitsReview11ExactLists(t *testing.T) {
	t.Parallel()
	e := startReviewFairHub(t)
	h := e.h
	home := e.vars["malloryHome"]
	base := cmPath("/clusters/" + home)
	big := strings.Repeat("x", 1<<20-512)
	for i := range 12 {
		body := fmt.Sprintf(`{"metadata":{"name":"big-%d"},"data":{"v":%q}}`, i, big)
		if code, out := h.doAs(e.tokens["hubadmin"], http.MethodPost, base, body); code != http.StatusCreated {
			t.Fatalf("create big-%d: %d %.300s", i, code, out)
		}
	}
	code, out := h.doAs(e.tokens["hubadmin"], http.MethodGet, base+"?limit=1", "")
	if code != http.StatusOK {
		t.Fatalf("list: %d %.300s", code, out)
	}
	var l struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(out), &l); err != nil || l.Metadata.ResourceVersion == "" {
		t.Fatalf("list's resourceVersion: %v %.300s", err, out)
	}
	// A later write, then a restart: the watch cache begins after the
	// version noted and hands a list at it exactly to etcd.
	if code, out := h.doAs(e.tokens["hubadmin"], http.MethodPost, base, `{"metadata":{"name":"later"}}`); code != http.StatusCreated {
		t.Fatalf("create later: %d %.300s", code, out)
	}
	h.restart()
	u := h.URL + base + "?resourceVersionMatch=Exact&resourceVersion=" + url.QueryEscape(l.Metadata.ResourceVersion)
	const table = "application/json;as=Table;g=meta.k8s.io;v=v1"
	exactList := func(cl *http.Client) (string, string) {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		req.Header.Set("Authorization", "Bearer "+e.tokens["mallory"])
		req.Header.Set("Accept", table)
		resp, err := cl.Do(req)
		if err != nil {
			return "ERR", err.Error()
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return "ERR", err.Error()
		}
		return r5Answer(resp), string(b)
	}
	cl := r5Client(h, 2*time.Minute)
	if got, body := exactList(cl); got != "200" || !strings.Contains(body, `"kind":"Table"`) || len(body) > 64<<10 {
		t.Fatalf("one list at the version noted: %s, %d bytes %.300s; want a small Table", got, len(body), body)
	}
	// The next one is as wide as what it read: 12 MiB at 256 KiB a seat,
	// at least 32 seats (wharf_fairness_request_seats).
	sum0 := readSeatsSum(t, e)
	if got, body := exactList(cl); got != "200" {
		t.Fatalf("a second list at the version noted: %s %.300s", got, body)
	}
	if seats := readSeatsSum(t, e) - sum0; seats < 32 {
		t.Errorf("a list that read 12 MiB from etcd took %v seats, want at least 32: it was weighed by its small Table", seats)
	}
	victimDone := r4Victim(e, "r11", r5VictimOps)
	bodies := &firstBodies{}
	got := flood(80, 3, func(int) *http.Client { return cl }, func(cl *http.Client, _, _ int, got *codes) {
		k, b := exactList(cl)
		got.add(k)
		bodies.note(k, b)
	})
	failed := <-victimDone
	t.Logf("r11:e1: mallory's exact lists: %s; alice: %d of %d operations failed", got, len(failed), r5VictimOps)
	hubHealthy(t, h)
	if len(failed) > 0 {
		t.Errorf("alice: %d of %d operations failed: %s", len(failed), r5VictimOps, strings.Join(failed[:min(len(failed), 5)], "; "))
	}
	for k, n := range got.snapshot() {
		if k != "200" && k != "429" {
			t.Errorf("%d answers %q (%.300s)", n, k, bodies.get(k))
		}
	}
}

// readSeatsSum is the hub's wharf_fairness_request_seats_sum of
// read-only requests.
func readSeatsSum(t *testing.T, e *attackEnv) float64 {
	t.Helper()
	code, body := e.as("hubadmin", http.MethodGet, "/metrics", "", nil)
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %.300s", code, body)
	}
	for _, l := range strings.Split(body, "\n") {
		var v float64
		if _, err := fmt.Sscanf(l, `wharf_fairness_request_seats_sum{kind="read-only"} %g`, &v); err == nil {
			return v
		}
	}
	t.Fatalf("/metrics lacks wharf_fairness_request_seats_sum{kind=\"read-only\"}")
	return 0
}
