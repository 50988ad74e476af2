package hub

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Rows of the attack review about shared capacity (B10) and the
// process-wide paths' spellings (attempt 68).

// slowPosts opens n connections that each start a POST into bob's home
// and never finish its body, as the tester's slow-body script did: each
// holds a mutating request slot until the connections are closed.
func slowPosts(e *attackEnv, n int, vars map[string]string) ([]net.Conn, error) {
	u, err := url.Parse(e.h.URL)
	if err != nil {
		return nil, err
	}
	head := expand("POST /clusters/{bobHome}/api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: "+u.Host+
		"\r\nAuthorization: Bearer bob-token\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", vars)
	var conns []net.Conn
	for i := 0; i < n; i++ {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", u.Host,
			&tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}}) //nolint:gosec // the attack hub's self-signed cert
		if err != nil {
			closeAll(conns)
			return nil, fmt.Errorf("connection %d: %w", i, err)
		}
		if _, err := c.Write([]byte(head)); err != nil {
			closeAll(append(conns, c))
			return nil, fmt.Errorf("connection %d: %w", i, err)
		}
		conns = append(conns, c)
	}
	return conns, nil
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		_ = c.Close()
	}
}

func init() {
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"during-{n}"}}`
	registerAttacks(
		// B10: one person's slow writes must not take every other
		// person's write capacity. FAILING on 76ccc35: the hub runs
		// upstream's plain max-in-flight limit (200 mutating) shared by
		// all, so alice, carol and hubadmin get 429.
		attack{finding: "review:B10", name: "210 slow-body POSTs into bob's home leave others' writes alone",
			// The checks run in after, not as steps: a failed step ends the
			// row at once, and the held connections must be closed whatever
			// the answers, or every later row would meet the 429s.
			after: func(e *attackEnv, vars map[string]string) error {
				held, err := slowPosts(e, 210, vars)
				defer closeAll(held)
				if err != nil {
					return err
				}
				// The hub has read the held requests' headers once bob's
				// own next write is refused: a barrier on the hub's state,
				// not a sleep (a hub that never refuses him fails here).
				if err := waitFor(60*time.Second, func() error {
					if code, _ := e.as("bob", http.MethodPost, "/clusters/{bobHome}"+revCMs+"?dryRun=All", cm, vars); code != http.StatusTooManyRequests {
						return fmt.Errorf("bob's slow requests do not hold slots yet: %d", code)
					}
					return nil
				}); err != nil {
					return err
				}
				var errs []string
				for _, c := range []struct{ who, path string }{
					{"alice", "/clusters/{aliceHome}" + revCMs},
					{"carol", "/clusters/{carolHome}" + revCMs},
					{"hubadmin", revCMs},
				} {
					if err := e.wantAs(http.StatusCreated, c.who, http.MethodPost, c.path, cm, vars); err != nil {
						errs = append(errs, err.Error())
					}
				}
				closeAll(held)
				// Leave the hub as it was for later rows: the slots are
				// free again once alice can write.
				if err := waitFor(60*time.Second, func() error {
					return e.wantAs(http.StatusCreated, "alice", http.MethodPost, "/clusters/{aliceHome}"+revCMs+"?dryRun=All",
						strings.Replace(cm, "during", "after", 1), vars)
				}); err != nil {
					errs = append(errs, err.Error())
				}
				if len(errs) > 0 {
					return fmt.Errorf("while bob held 210 slow writes: %s", strings.Join(errs, "; "))
				}
				return nil
			}},
	)

	// Attempt 68: spellings of the process-wide paths through bob's
	// home; none is served to him.
	var steps []step
	for _, p := range []string{
		"/metrics/", "/metrics?x=1", "//metrics", "/./metrics", "/%6detrics", "/METRICS", "/debug/pprof", "/debug/pprof/heap",
		"/api/../metrics", "/version/../metrics", "/healthz/../metrics", "/openapi/v2/%2e%2e/%2e%2e/metrics", "/readyz/%2e%2e/metrics",
		"/apis/%2e%2e/debug/pprof/", "/version/%2e%2e/statusz",
	} {
		steps = append(steps, step{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + p, hasNot: "# HELP"},
			step{as: "bob", method: http.MethodGet, path: "/clusters/{bobID}" + p, hasNot: "goroutine profile"})
	}
	steps = append(steps,
		step{as: "bob", method: http.MethodPut, path: "/clusters/{bobHome}/debug/flags/v/", body: "9", ctype: "text/plain", want: http.StatusForbidden},
		step{as: "bob", method: http.MethodPut, path: "/clusters/{bobHome}/api/../debug/flags/v", body: "9", ctype: "text/plain", hasNot: "successfully set"},
		step{as: "bob", method: http.MethodPut, path: "/clusters/{bobHome}/version/../debug/flags/v", body: "9", ctype: "text/plain", hasNot: "successfully set"},
	)
	registerAttacks(attack{finding: "review:68", name: "spellings of /metrics, /debug and /statusz through bob's home", steps: steps, after: logLevelUnchanged})
}
