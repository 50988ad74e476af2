package hub

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Issue 24, second outside review, B-A to B-C: a request's seats counted
// how many ran at once, not the CPU they burned. Ten 889 KB ConfigMaps of
// 60,000 keys posted at once (dry run, refused or not: 2.4–3.7 s of CPU
// each, B-A), merge patches of 900 KB (B-B) and 40 GETs at once of the
// OpenAPI and discovery documents (B-C), each inside a tenant's share,
// took both cores of a 2-core hub: its lease renewals missed their
// deadline and the edges provider was fenced. Now a write takes seats by
// the body length it announces, before a byte of the body is read, and
// an API document by its size as its caller last got it (unknown: the
// tenant's whole read share).
//
// The rows hold a request in flight, deterministically: a write whose
// body never arrives, a document read over HTTP/2 with a one-byte flow
// window that is never read. They assert the seats the hub's flow
// control says the held request takes (upstream's metric
// apiserver_flowcontrol_current_executing_seats, hub-wide: only the
// attacker is counted on this hub, administrators are exempt) and whom
// it keeps waiting (429 once the wait is up), never a time.

// rawRequest opens a TLS connection to the hub and writes the headers of
// a request as who (headers: its Content-Type and length, each line
// ending in CRLF), then first (the start of its body). The caller closes
// the connection.
func rawRequest(t *testing.T, e *attackEnv, who, method, path, headers, first string) net.Conn {
	t.Helper()
	base := e.h.client().Transport.(*http.Transport)
	u, err := url.Parse(e.h.URL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := tls.Dial("tcp", u.Host, &tls.Config{RootCAs: base.TLSClientConfig.RootCAs, ServerName: u.Hostname()})
	if err != nil {
		t.Fatal(err)
	}
	req := method + " " + expand(path, e.vars) + " HTTP/1.1\r\nHost: " + u.Host + "\r\nAuthorization: Bearer " + e.tokens[who] +
		"\r\n" + headers + "\r\n" + first
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	return c
}

// cpuHoldWrite sends a write's headers and first bytes (rawRequest) and
// keeps the connection open until the returned func.
func cpuHoldWrite(t *testing.T, e *attackEnv, who, method, path, headers, first string) func() {
	t.Helper()
	c := rawRequest(t, e, who, method, path, headers, first)
	// The hub notices the close only when it next reads: wait until the
	// held write has left, so that the next subtest counts only its own
	// (CI once read the previous subtest's 50 seats as the next one's).
	return func() {
		_ = c.Close()
		cpuHeld(t, e, "mutating", 0)
	}
}

// holdRead GETs path as who with header over HTTP/2, offering a one-byte
// flow window and never reading the body: the hub's handler blocks on
// its first full write and holds its seats until the returned func.
func holdRead(t *testing.T, e *attackEnv, who, path string, header map[string]string) func() {
	t.Helper()
	base := e.h.client().Transport.(*http.Transport)
	tr := &http.Transport{TLSClientConfig: base.TLSClientConfig.Clone(), ForceAttemptHTTP2: true, DisableCompression: true,
		HTTP2: &http.HTTP2Config{MaxReceiveBufferPerStream: 1}}
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.h.URL+expand(path, e.vars), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.tokens[who])
	for k, v := range header {
		req.Header.Set(k, v)
	}
	go func() {
		if resp, err := (&http.Client{Transport: tr}).Do(req); err == nil {
			<-ctx.Done()
			_ = resp.Body.Close()
		}
	}()
	return func() {
		cancel()
		tr.CloseIdleConnections()
	}
}

// cpuHoldRead is holdRead whose release waits until the read has left.
func cpuHoldRead(t *testing.T, e *attackEnv, who, path string) func() {
	t.Helper()
	release := holdRead(t, e, who, path, nil)
	return func() {
		release()
		cpuHeld(t, e, "readonly", 0)
	}
}

// cpuSeats reads the requests executing in the hub-wide queue set of kind
// (readonly, mutating) and the seats they hold.
func cpuSeats(e *attackEnv, kind string) (requests, seats int, err error) {
	code, body := e.as("admin", http.MethodGet, "/metrics", "", e.vars)
	if code != http.StatusOK {
		return 0, 0, fmt.Errorf("/metrics: %d", code)
	}
	labels := `{flow_schema="wharf-tenant-` + kind + `",priority_level="wharf-hub-` + kind + `"} `
	requests, seats = -1, -1
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for name, into := range map[string]*int{"apiserver_flowcontrol_current_executing_requests": &requests, "apiserver_flowcontrol_current_executing_seats": &seats} {
			if v, ok := strings.CutPrefix(line, name+labels); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return 0, 0, err
				}
				*into = int(f)
			}
		}
	}
	return requests, seats, nil
}

// cpuHeld waits until exactly n requests of kind execute (those the row
// holds; everything else has ended) and returns the seats they hold.
// Untimed: the deadline only bounds a broken hub.
func cpuHeld(t *testing.T, e *attackEnv, kind string, n int) int {
	t.Helper()
	var seats int
	if err := waitFor(60*time.Second, func() error {
		r, s, err := cpuSeats(e, kind)
		if err != nil {
			return err
		}
		// The two gauges are set apart (the request's count as it
		// starts, its seats as it is dispatched): a request counted
		// before its seats is read again.
		if r != n || (n > 0 && s == 0) || (n == 0 && s > 0) {
			return fmt.Errorf("%d %s requests executing holding %d seats, want %d requests", r, kind, s, n)
		}
		seats = s
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return seats
}

// TestAttackLimitsCPU runs rows r24:B-A, B-B and B-C on one hub with the
// default budgets: 200 mutating and 400 read-only seats hub-wide, 20 and
// 40 per tenant, 50 and 100 for one request at most.
func TestAttackLimitsCPU(t *testing.T) {
	t.Parallel()
	e := startReviewFairHub(t)
	const mutatingShare, mostMutating, readShare = 20, 50, 40
	home := "/clusters/{malloryHome}"
	small := dryRunCM("mallory", home)
	small.want = http.StatusCreated
	if code, body := e.send(small, e.vars); code != http.StatusCreated {
		t.Fatalf("mallory's small dry-run write: %d %s", code, body)
	}
	others := []step{
		{as: "alice", method: http.MethodPost, path: cmPath("/clusters/{aliceHome}") + "?dryRun=All", body: cmJSON("probe-{n}"), want: http.StatusCreated},
		{as: "hubadmin", method: http.MethodPost, path: cmPath(home) + "?dryRun=All", body: cmJSON("probe-{n}"), want: http.StatusCreated},
	}
	served := func(t *testing.T, steps ...step) {
		t.Helper()
		for _, s := range steps {
			if code, body := e.send(s, e.vars); code != s.want {
				t.Fatalf("%s %s as %s: %d, want %d: %.300s", s.method, expand(s.path, e.vars), s.as, code, s.want, body)
			}
		}
	}
	refused := func(t *testing.T, s step) {
		t.Helper()
		if err := tooMany(e, e.vars, s); err != nil {
			t.Fatalf("while the held request holds her share: %.400s", err)
		}
	}

	t.Run("r24:B-A/a write announcing 889 KB holds its tenant's whole share before its body is read", func(t *testing.T) {
		release := cpuHoldWrite(t, e, "mallory", http.MethodPost, cmPath(home)+"?dryRun=All", "Content-Type: application/json\r\nContent-Length: 889000\r\n", `{"apiVersion":"v1",`)
		defer release()
		if seats := cpuHeld(t, e, "mutating", 1); seats != mostMutating {
			t.Errorf("the held 889 KB write holds %d seats, want %d (more than her share of %d: it runs alone)", seats, mostMutating, mutatingShare)
		}
		// Her next write waits for the held one, then gets 429: a second
		// large body is not decoded beside the first. The body is real
		// (300 KB), so that on a hub counting requests it is served.
		big := small
		big.body = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big-{n}"},"data":{"d":"` + strings.Repeat("x", 300_000) + `"}}`
		refused(t, big)
		refused(t, small)
		// Everybody else's writes are served.
		served(t, others...)
	})

	t.Run("r24:B-B/a merge patch announcing 900 KB holds its tenant's whole share", func(t *testing.T) {
		served(t, step{as: "mallory", method: http.MethodPost, path: cmPath(home), body: cmJSON("patched-{n}"), want: http.StatusCreated})
		release := cpuHoldWrite(t, e, "mallory", http.MethodPatch, cmPath(home)+"/patched-{n}?dryRun=All",
			"Content-Type: application/merge-patch+json\r\nContent-Length: 900000\r\n", `{"data":{`)
		defer release()
		if seats := cpuHeld(t, e, "mutating", 1); seats != mostMutating {
			t.Errorf("the held 900 KB patch holds %d seats, want %d", seats, mostMutating)
		}
		refused(t, small)
		served(t, others...)
	})

	t.Run("r24:B-A/a body of unknown length (chunked) holds its tenant's whole share", func(t *testing.T) {
		release := cpuHoldWrite(t, e, "mallory", http.MethodPost, cmPath(home)+"?dryRun=All", "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n", "1\r\n{\r\n")
		defer release()
		if seats := cpuHeld(t, e, "mutating", 1); seats != mutatingShare {
			t.Errorf("the held chunked write holds %d seats, want her share, %d", seats, mutatingShare)
		}
		refused(t, small)
		served(t, others...)
	})

	t.Run("r24:B-A/an ordinary write (6 KB) takes one seat", func(t *testing.T) {
		release := cpuHoldWrite(t, e, "mallory", http.MethodPost, cmPath(home)+"?dryRun=All", "Content-Type: application/json\r\nContent-Length: 6000\r\n", "{")
		defer release()
		if seats := cpuHeld(t, e, "mutating", 1); seats != 1 {
			t.Errorf("the held 6 KB write holds %d seats, want 1", seats)
		}
		served(t, small)
	})

	getOne := step{as: "mallory", method: http.MethodGet, path: home + "/api/v1/namespaces/default", want: http.StatusOK}
	t.Run("r24:B-C/an API document of unknown size holds its tenant's whole read share", func(t *testing.T) {
		served(t, getOne)
		release := cpuHoldRead(t, e, "mallory", home+"/openapi/v2")
		defer release()
		if seats := cpuHeld(t, e, "readonly", 1); seats != readShare {
			t.Errorf("the held GET of /openapi/v2, size not known, holds %d seats, want her share, %d", seats, readShare)
		}
		refused(t, getOne)
		served(t, step{as: "alice", method: http.MethodGet, path: "/clusters/{aliceHome}/openapi/v2", want: http.StatusOK})
	})

	t.Run("r24:B-C/once its size is known, an API document holds seats by its size", func(t *testing.T) {
		// The held read above was cut short: it taught no size. A whole
		// answer does, counted as sent (uncompressed here, as the held
		// read asks).
		code, body := e.send(step{as: "mallory", method: http.MethodGet, path: home + "/openapi/v2", header: map[string]string{"Accept-Encoding": "identity"}}, e.vars)
		if code != http.StatusOK {
			t.Fatalf("mallory's /openapi/v2: %d %.300s", code, body)
		}
		const bytesPerSeat = 256 << 10
		want := (len(body) + bytesPerSeat - 1) / bytesPerSeat
		if want < 2 {
			t.Fatalf("/openapi/v2 is %d bytes: too small for this row to tell sizes from requests", len(body))
		}
		release := cpuHoldRead(t, e, "mallory", home+"/openapi/v2")
		defer release()
		if seats := cpuHeld(t, e, "readonly", 1); seats != want {
			t.Errorf("the held GET of /openapi/v2 (%d bytes) holds %d seats, want %d", len(body), seats, want)
		}
		served(t, getOne)
	})
	// Nothing is left in flight.
	cpuHeld(t, e, "mutating", 0)
	cpuHeld(t, e, "readonly", 0)
}
