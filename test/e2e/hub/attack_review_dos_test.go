package hub

import "net/http"

// The process-wide paths' spellings of the attack review (attempt 68).
// Its B10 (shared in-flight capacity) rows are in attack_fairness_test.go.
func init() {
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
