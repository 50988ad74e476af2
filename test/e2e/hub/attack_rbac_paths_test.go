package hub

import (
	"fmt"
	"net/http"
	"strings"
)

// Finding 6 of issue 11: a workspace admin holds nonResourceURLs "*", and
// every person is admin of their home, so through /clusters/<home>/... any
// person read the hub's /metrics and /debug/pprof and set its log level.
// Process-wide paths are for hub administrators only, whatever a
// workspace's RBAC says, in every addressing form; the per-workspace paths
// (discovery, OpenAPI, version, health) keep working.

// processPaths are the process-wide paths the hub serves or might serve,
// with what a hub administrator gets (404: not served by this hub; the
// guard must hold anyway, so a later library cannot open it).
var processPaths = []struct {
	path  string
	admin int
}{
	{"/metrics", http.StatusOK},
	{"/metrics/slis", http.StatusOK},
	{"/debug/pprof/", http.StatusOK},
	{"/debug/pprof/goroutine", http.StatusOK},
	{"/debug/pprof/cmdline", 0},
	{"/debug/flags/", http.StatusOK},
	{"/debug/api_priority_and_fairness/dump_priority_levels", 0},
	{"/statusz", http.StatusOK},
	{"/flagz", 0},
	{"/configz", 0},
	{"/logs/", 0},
	{"/", http.StatusOK},
	{"/readyz/etcd", http.StatusOK},
	{"/livez/ping", http.StatusOK},
	{"/healthz/ping", http.StatusOK},
}

func init() {
	for _, p := range processPaths {
		var steps []step
		// Bob's own home by path and by id, no prefix (root), and a
		// victim's home; then a hub administrator, and bob again at once,
		// inside any decision cache's lifetime.
		for _, prefix := range []string{"/clusters/{bobHome}", "/clusters/{bobID}", "", "/clusters/{aliceHome}"} {
			steps = append(steps, step{as: "bob", method: http.MethodGet, path: prefix + p.path, want: http.StatusForbidden,
				has: fmt.Sprintf(`cannot get path \"%s\"`, p.path)})
		}
		steps = append(steps,
			step{as: "hubadmin", method: http.MethodGet, path: p.path, want: p.admin, hasNot: "forbidden"},
			step{as: "hubadmin", method: http.MethodGet, path: "/clusters/{bobHome}" + p.path, want: p.admin, hasNot: "forbidden"},
			step{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + p.path, want: http.StatusForbidden},
			step{as: "bob", method: http.MethodGet, path: p.path, want: http.StatusForbidden},
		)
		registerAttacks(attack{finding: "11.6", name: "GET " + p.path, steps: steps})
	}

	var put []step
	for _, prefix := range []string{"/clusters/{bobHome}", "/clusters/{bobID}", ""} {
		put = append(put, step{as: "bob", method: http.MethodPut, path: prefix + "/debug/flags/v", body: "9", ctype: "text/plain",
			want: http.StatusForbidden, has: `cannot put path \"/debug/flags/v\"`})
	}
	registerAttacks(
		attack{finding: "11.6", name: "PUT /debug/flags/v does not change the log level", steps: put, after: logLevelUnchanged},
		attack{finding: "11.6", name: "per-workspace paths keep working",
			steps: []step{
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/api", want: http.StatusOK},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobID}/apis", want: http.StatusOK},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/openapi/v3", want: http.StatusOK},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/openapi/v2", want: http.StatusOK},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/version", want: http.StatusOK},
				{as: "bob", method: http.MethodGet, path: "/version", want: http.StatusOK},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/healthz", want: http.StatusOK},
				{as: "bob", method: http.MethodGet, path: "/livez", want: http.StatusOK},
				{as: "bob", method: http.MethodGet, path: "/readyz", want: http.StatusOK},
				{as: "bob", method: http.MethodGet, path: "/api/whoami", want: http.StatusOK},
			}},
		attack{finding: "11.6", name: "a path that leaves an allowed prefix",
			steps: []step{
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/api/../metrics", hasNot: "# HELP"},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/api/%2e%2e/metrics", hasNot: "# HELP"},
				{as: "bob", method: http.MethodGet, path: "/api/../debug/pprof/cmdline", hasNot: "wharf-hub"},
			}},
	)
}

// logLevelUnchanged proves the refused PUTs changed nothing: at level 3
// and above the hub logs every request's URI, so a marked request by a hub
// administrator must not appear in its log. The log line is written before
// the response is flushed, so no waiting is needed. If the level did
// change (an unfixed hub), it is set back to 0 for the rows after this one.
func logLevelUnchanged(e *attackEnv, vars map[string]string) error {
	marker := "loglevel-probe-" + vars["n"]
	if err := e.wantAs(http.StatusOK, "hubadmin", http.MethodGet, "/version?"+marker, "", vars); err != nil {
		return err
	}
	if strings.Contains(e.h.log.String(), marker) {
		code, body := e.send(step{as: "hubadmin", method: http.MethodPut, path: "/debug/flags/v", body: "0", ctype: "text/plain"}, vars)
		return fmt.Errorf("bob's PUT raised the hub's log level (request URIs are logged); reset: %d %s", code, body)
	}
	return nil
}
