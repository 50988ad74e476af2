package hub

import (
	"net/http"
	"testing"
)

// Issue 24, second outside review, B-C: 40 GETs at once of the cached
// OpenAPI and discovery documents, 1-2 seats each once their size was
// known, came back 1,300 times a second: encrypting and sending them took
// both cores of a 2-core hub. Each tenant now has a budget of bytes moved
// (--tenant-traffic-bytes-per-cpu after --tenant-traffic-burst-bytes);
// in debt, its next requests wait within the queue wait, then get 429.
//
// The row sets a budget that one uncompressed /openapi/v2 (several MB)
// uses up at once, with a rate so low that her debt lasts far longer than
// the 5 s queue wait: her next request is refused whatever the machine's
// speed. Another tenant and a hub admin are served, as is she once the
// rate is irrelevant to them. No time is asserted.
func TestAttackLimitsTraffic(t *testing.T) {
	t.Parallel()
	e := startReviewFairHub(t, "--tenant-traffic-bytes-per-cpu=1024", "--tenant-traffic-burst-bytes=262144")
	doc := func(who, home string) step {
		// identity: counted as the hub writes it, uncompressed.
		return step{as: who, method: http.MethodGet, path: "/clusters/{" + home + "}/openapi/v2", header: map[string]string{"Accept-Encoding": "identity"}, want: http.StatusOK}
	}
	t.Run("r24:B-C/a tenant past its traffic budget waits, then gets 429; others are served", func(t *testing.T) {
		if code, body := e.send(doc("mallory", "malloryHome"), e.vars); code != http.StatusOK {
			t.Fatalf("mallory's first /openapi/v2, within her burst: %d %.300s", code, body)
		}
		// Now in debt by what passed 256 KiB, at 1 KiB/s per CPU: far past the 5 s
		// queue wait, so refused at once (held 1 s, as every refusal).
		if err := tooMany(e, e.vars, doc("mallory", "malloryHome")); err != nil {
			t.Fatalf("mallory's next /openapi/v2 while in debt: %v", err)
		}
		small := step{as: "mallory", method: http.MethodGet, path: cmPath("/clusters/{malloryHome}"), want: http.StatusOK}
		if err := tooMany(e, e.vars, small); err != nil {
			t.Fatalf("mallory's small list while in debt: %v", err)
		}
		for _, s := range []step{doc("alice", "aliceHome"), doc("hubadmin", "malloryHome")} {
			if code, body := e.send(s, e.vars); code != http.StatusOK {
				t.Fatalf("%s's /openapi/v2 while mallory is in debt: %d %.300s", s.as, code, body)
			}
		}
	})
}
