package hub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"
)

// Rows of attack review 17 (findings "review17:<n>"): the operational
// surfaces of one hub. bob, admin of his home (and holder of a
// service-account token there), goes for the hub-process paths with and
// without path tricks, the health checks' verbose answers, the
// single-replica provider's Lease and the CatalogEntry status the
// supervisor writes, and the per-address throttle through a trusted
// proxy. The attack hub's example provider is `replicas: single`, so its
// Lease kube-system/provider-example in root is live. Attacks that need two
// replicas, a drain or files on disk are in attack_review17_replicas_test.go
// and attack_review17_files_test.go.

const (
	r17Lease = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
	r17CE    = "/apis/providers.wharf.dev/v1alpha1/catalogentries"
)

// r17ProcessPaths are paths about the hub process, as sent (no cleaning):
// none may answer anyone but hub administrators, however spelled.
var r17ProcessPaths = []string{
	"/metrics", "/metrics/", "/METRICS", "//metrics", "/livez/../metrics", "/readyz/%2e%2e/metrics",
	"/%2e%2e/metrics", "/clusters/{bobHome}/metrics", "/clusters/{bobHome}/../metrics",
	"/clusters/{bobHome}/%2e%2e/%2e%2e/metrics", "/clusters/root/metrics", "/clusters/*/metrics",
	"/debug/pprof/", "/debug/pprof/heap?debug=1", "/debug/pprof/goroutine?debug=2", "/clusters/{bobHome}/debug/pprof/",
	"/livez/../debug/pprof/", "/livez/%2e%2e/metrics", "/readyz/..;/metrics", "/healthz%2F..%2Fmetrics", "/livez/..%5cmetrics",
	"/clusters/{bobHome}/livez/../metrics", "/clusters/{bobHome}/livez/%2e%2e/%2e%2e/%2e%2e/metrics", "/livez/./../statusz", "/livez/..%2fmetrics", "/livez%2f..%2fmetrics", "/healthz/./../metrics", "/readyz/%2e%2e/debug/pprof/heap", "/flagz", "/configz", "/statusz", "/debug/flags/v",
}

// r17Steps sends every process path as who and wants code; the body must
// never be the process's own answer.
func r17Steps(who string, code int) []step {
	var out []step
	for _, p := range r17ProcessPaths {
		want := code
		if who == "" && r17HealthSubPath(p) {
			// Decoded and cleaned, literally a sub-path of a health
			// endpoint (a segment "..;", or "..%5cmetrics" decoded, is no ".."): where
			// health sub-paths are anonymous, kube's 403 answers it, as
			// it answers /readyz/anything. It must still leak nothing.
			want = 0
		}
		for _, leak := range []string{"# HELP", "goroutine "} {
			out = append(out, step{as: who, method: http.MethodGet, path: p, want: want, hasNot: leak})
		}
	}
	return out
}

// r17HealthSubPath reports whether p, decoded and cleaned as the server
// sees it, lies under /livez/, /readyz/ or /healthz/.
func r17HealthSubPath(p string) bool {
	dec, err := url.PathUnescape(p)
	if err != nil {
		return false
	}
	c := path.Clean(dec)
	for _, h := range []string{"/livez/", "/readyz/", "/healthz/"} {
		if strings.HasPrefix(c, h) {
			return true
		}
	}
	return false
}

// r17Leaks are what a health answer must never hold.
func r17Leaks(e *attackEnv) []string {
	out := []string{e.h.Token, "hubadmin-token", "alice-token", e.h.opts.dataDir}
	for _, s := range e.h.opts.etcdServers {
		if u, err := url.Parse(s); err == nil {
			out = append(out, u.Host)
		}
	}
	return out
}

// r17RootLease reads the example provider's Lease in root as the admin.
func r17RootLease(e *attackEnv, vars map[string]string) (holder, rv string, err error) {
	code, body := e.as("admin", http.MethodGet, "/clusters/root"+r17Lease+"/provider-example", "", vars)
	var l struct {
		Metadata struct{ ResourceVersion string } `json:"metadata"`
		Spec     struct{ HolderIdentity string }  `json:"spec"`
	}
	if err := json.Unmarshal([]byte(body), &l); code != http.StatusOK || err != nil {
		return "", "", fmt.Errorf("root lease: %d %v %s", code, err, body)
	}
	return l.Spec.HolderIdentity, l.Metadata.ResourceVersion, nil
}

// r17EnableExample binds the example provider in bob's home (it may be
// bound already by an earlier row).
func r17EnableExample(e *attackEnv, vars map[string]string) error {
	code, body := e.as("bob", http.MethodPost, "/clusters/{bobHome}"+pbBase, bindingTo("example", "example"), vars)
	if code != http.StatusCreated && code != http.StatusConflict {
		return fmt.Errorf("binding: %d %s", code, body)
	}
	if code == http.StatusCreated {
		vars["r17Bound"] = "yes"
	}
	return waitFor(60*time.Second, func() error {
		code, body := e.send(step{as: "bob", method: http.MethodGet, path: "/services/providers/example/whoami",
			header: map[string]string{"X-Wharf-Workspace": "{bobHome}"}}, vars)
		if code != http.StatusOK || !strings.Contains(body, `"User":"bob"`) {
			return fmt.Errorf("example as bob: %d %s", code, body)
		}
		return nil
	})
}

// r17Undo deletes, as bob, what a row of his created in his home, so
// that the rows after this review's see bob as they expect him: a plain
// admin of his home, the example provider not enabled there.
func r17Undo(e *attackEnv, vars map[string]string) error {
	paths := []string{}
	if vars["r17Bound"] == "yes" {
		paths = append(paths, "/clusters/{bobHome}"+pbBase+"/example")
	}
	for _, n := range []string{"r17-all-{n}", "r17-imp-{n}"} {
		paths = append(paths, "/clusters/{bobHome}/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/"+n,
			"/clusters/{bobHome}/apis/rbac.authorization.k8s.io/v1/clusterroles/"+n)
	}
	paths = append(paths, "/clusters/{bobHome}"+r17Lease+"/provider-example", "/clusters/{bobHome}"+r17Lease+"/provider-single")
	for _, p := range paths {
		if code, body := e.as("bob", http.MethodDelete, p, "", vars); code != http.StatusOK && code != http.StatusNotFound && code != http.StatusAccepted {
			return fmt.Errorf("DELETE %s: %d %s", expand(p, vars), code, body)
		}
	}
	return nil
}

func init() {
	ceBody := `{"apiVersion":"providers.wharf.dev/v1alpha1","kind":"CatalogEntry","metadata":{"name":"example"},"spec":{"version":"v9","replicas":"Single"},` +
		`"status":{"hubReplica":"bob","replicas":[{"name":"bob","state":"Restarting","lastError":"x","nextRetryTime":"2099-01-01T00:00:00Z"}]}}`
	statusPatch := `{"status":{"hubReplica":"bob","replicas":[{"name":"bob","state":"Restarting","nextRetryTime":"2099-01-01T00:00:00Z"}]}}`
	registerAttacks(
		attack{finding: "review17:1", name: "hub-process paths as a workspace admin, however spelled", steps: r17Steps("bob", http.StatusForbidden)},
		attack{finding: "review17:2", name: "hub-process paths anonymously, however spelled", steps: r17Steps("", http.StatusUnauthorized)},
		attack{finding: "review17:3", name: "hub-process paths with a service-account token",
			before: func(e *attackEnv, vars map[string]string) error {
				return mintToken(e, vars, "/clusters/{bobHome}", "r17sa-{n}", "bob-sa-r17")
			},
			steps: r17Steps("bob-sa-r17", http.StatusForbidden)},
		attack{finding: "review17:4", name: "a home grant of every non-resource URL reaches no process path",
			cleanup: r17Undo,
			before: func(e *attackEnv, vars map[string]string) error {
				role := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"r17-all-{n}"},"rules":[{"nonResourceURLs":["*"],"verbs":["*"]}]}`
				if err := e.wantAs(http.StatusCreated, "bob", http.MethodPost, "/clusters/{bobHome}/apis/rbac.authorization.k8s.io/v1/clusterroles", role, vars); err != nil {
					return err
				}
				crb := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"r17-all-{n}"},` +
					`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"r17-all-{n}"},"subjects":[{"kind":"User","name":"bob"}]}`
				return e.wantAs(http.StatusCreated, "bob", http.MethodPost, "/clusters/{bobHome}/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", crb, vars)
			},
			steps: append(r17Steps("bob", http.StatusForbidden),
				step{as: "bob", method: http.MethodPut, path: "/clusters/{bobHome}/debug/flags/v", body: "9", ctype: "text/plain", want: http.StatusForbidden},
				step{as: "bob", method: http.MethodPut, path: "/debug/flags/v", body: "9", ctype: "text/plain", want: http.StatusForbidden})},
		attack{finding: "review17:5", name: "impersonating system:masters or the hub admin, or front-proxy headers, to reach /metrics",
			cleanup: r17Undo,
			before: func(e *attackEnv, vars map[string]string) error {
				role := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"r17-imp-{n}"},"rules":[{"apiGroups":[""],"resources":["users","groups"],"verbs":["impersonate"]}]}`
				if err := e.wantAs(http.StatusCreated, "bob", http.MethodPost, "/clusters/{bobHome}/apis/rbac.authorization.k8s.io/v1/clusterroles", role, vars); err != nil {
					return err
				}
				crb := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"r17-imp-{n}"},` +
					`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"r17-imp-{n}"},"subjects":[{"kind":"User","name":"bob"}]}`
				return e.wantAs(http.StatusCreated, "bob", http.MethodPost, "/clusters/{bobHome}/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", crb, vars)
			},
			steps: []step{
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/metrics", header: map[string]string{"Impersonate-User": "bob", "Impersonate-Group": "system:masters"}, want: http.StatusForbidden, hasNot: "# HELP"},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/metrics", header: map[string]string{"Impersonate-User": "hubadmin"}, want: http.StatusForbidden, hasNot: "# HELP"},
				{as: "bob", method: http.MethodGet, path: "/metrics", header: map[string]string{"Impersonate-User": "hubadmin"}, want: http.StatusForbidden, hasNot: "# HELP"},
				{as: "bob", method: http.MethodGet, path: "/metrics", header: map[string]string{"X-Remote-User": "hubadmin", "X-Remote-Group": "system:masters"}, want: http.StatusForbidden, hasNot: "# HELP"},
				{method: http.MethodGet, path: "/metrics", header: map[string]string{"X-Remote-User": "hubadmin", "X-Remote-Group": "system:masters"}, want: http.StatusUnauthorized},
				{method: http.MethodGet, path: "/metrics", header: map[string]string{"X-Kedge-User": "hubadmin", "X-Kedge-Groups": "system:masters"}, want: http.StatusUnauthorized},
			}},
		attack{finding: "review17:6", name: "verbose health answers hold no secret, path or etcd address",
			after: func(e *attackEnv, vars map[string]string) error {
				for _, who := range []string{"", "bob", "bob-sa-r17"} {
					if _, ok := e.tokens[who]; who != "" && !ok {
						continue
					}
					for _, p := range []string{"/readyz?verbose", "/livez?verbose", "/healthz?verbose", "/readyz/etcd?verbose", "/livez/etcd",
						"/readyz/shutdown", "/clusters/{bobHome}/readyz?verbose", "/readyz?verbose&exclude=ping", "/livez/../readyz?verbose"} {
						_, body := e.send(step{as: who, method: http.MethodGet, path: p}, vars)
						for _, leak := range r17Leaks(e) {
							if leak != "" && strings.Contains(body, leak) {
								return fmt.Errorf("GET %s as %q holds %q:\n%s", p, who, leak, body)
							}
						}
					}
				}
				return nil
			}},
		attack{finding: "review17:7", name: "a Lease named like the provider's in bob's home moves nothing",
			cleanup: r17Undo,
			before: func(e *attackEnv, vars map[string]string) error {
				holder, rv, err := r17RootLease(e, vars)
				if err != nil {
					return err
				}
				vars["holder"], vars["rv"] = holder, rv
				return r17EnableExample(e, vars)
			},
			steps: []step{
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + r17Lease, want: http.StatusCreated,
					body: `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"provider-example"},"spec":{"holderIdentity":"bob","leaseDurationSeconds":86400,"acquireTime":"2099-01-01T00:00:00.000000Z","renewTime":"2099-01-01T00:00:00.000000Z"}}`},
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + r17Lease, want: http.StatusCreated,
					body: `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"provider-single"},"spec":{"holderIdentity":"{holder}","leaseDurationSeconds":1}}`},
			},
			after: func(e *attackEnv, vars map[string]string) error {
				// Six renewals of the root Lease by the same holder span more
				// than its 4 s duration: the holder never lost it.
				seen := map[string]bool{vars["rv"]: true}
				if err := waitFor(90*time.Second, func() error {
					holder, rv, err := r17RootLease(e, vars)
					if err != nil {
						return err
					}
					if holder != vars["holder"] {
						return fmt.Errorf("root lease holder %q, was %q", holder, vars["holder"])
					}
					seen[rv] = true
					if len(seen) < 7 {
						return fmt.Errorf("%d renewals seen", len(seen)-1)
					}
					return nil
				}); err != nil {
					return err
				}
				code, body := e.send(step{as: "bob", method: http.MethodGet, path: "/services/providers/example/whoami",
					header: map[string]string{"X-Wharf-Workspace": "{bobHome}"}}, vars)
				if code != http.StatusOK || !strings.Contains(body, `"User":"bob"`) {
					return fmt.Errorf("example after bob's lease: %d %s", code, body)
				}
				return nil
			}},
		attack{finding: "review17:8", name: "writing root's provider Lease in every way",
			steps: []step{
				{as: "bob", method: http.MethodPatch, path: "/clusters/root" + r17Lease + "/provider-example", body: `{"spec":{"holderIdentity":"bob"}}`, want: http.StatusForbidden},
				{as: "bob", method: http.MethodPatch, path: "/clusters/root" + r17Lease + "/provider-example?fieldManager=x&force=true", ctype: "application/apply-patch+yaml",
					body: `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"provider-example","namespace":"kube-system"},"spec":{"holderIdentity":"bob"}}`, want: http.StatusForbidden},
				{as: "bob", method: http.MethodDelete, path: "/clusters/root" + r17Lease + "/provider-example", want: http.StatusForbidden},
				{as: "bob", method: http.MethodDelete, path: "/clusters/root" + r17Lease + "/provider-example?dryRun=All", want: http.StatusForbidden},
				{as: "bob", method: http.MethodPost, path: "/clusters/{rootID}" + r17Lease, body: `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"provider-evil"}}`, want: http.StatusForbidden},
				{as: "bob", method: http.MethodGet, path: "/clusters/*/apis/coordination.k8s.io/v1/leases", want: http.StatusForbidden, hasNot: "provider-example"},
				{as: "bob-sa-r17", method: http.MethodPatch, path: "/clusters/root" + r17Lease + "/provider-example", body: `{"spec":{"holderIdentity":"bob"}}`, want: http.StatusForbidden},
			}},
		attack{finding: "review17:9", name: "CatalogEntry status, retry time and fault fields in root",
			steps: []step{
				{as: "bob", method: http.MethodPatch, path: "/clusters/root" + r17CE + "/example/status", body: statusPatch, want: http.StatusForbidden},
				{as: "bob", method: http.MethodPatch, path: "/clusters/root" + r17CE + "/example", body: statusPatch, want: http.StatusForbidden},
				{as: "bob", method: http.MethodPatch, path: "/clusters/root" + r17CE + "/example/status?fieldManager=x&force=true&dryRun=All", ctype: "application/apply-patch+yaml", body: ceBody, want: http.StatusForbidden},
				{as: "bob", method: http.MethodPatch, path: "/clusters/root" + r17CE + "/example?fieldManager=x&force=true", ctype: "application/apply-patch+yaml", body: ceBody, want: http.StatusForbidden},
				{as: "bob", method: http.MethodPut, path: "/clusters/root" + r17CE + "/example/status", body: ceBody, want: http.StatusForbidden},
				{as: "bob", method: http.MethodDelete, path: "/clusters/root" + r17CE + "/example", want: http.StatusForbidden},
				{as: "bob-sa-r17", method: http.MethodPatch, path: "/clusters/root" + r17CE + "/example/status", body: statusPatch, want: http.StatusForbidden},
				{as: "bob-sa-r17", method: http.MethodGet, path: "/clusters/root" + r17CE, want: http.StatusForbidden, hasNot: "hubReplica"},
				{as: "admin", method: http.MethodGet, path: "/clusters/root" + r17CE + "/example", want: http.StatusOK, hasNot: `"hubReplica":"bob"`},
			}},
		attack{finding: "review17:10", name: "a CatalogEntry with fault fields in bob's home, every write path",
			steps: []step{
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + r17CE, body: ceBody, want: http.StatusForbidden},
				{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}" + r17CE + "?dryRun=All", body: ceBody, want: http.StatusForbidden},
				{as: "bob", method: http.MethodPatch, path: "/clusters/{bobHome}" + r17CE + "/example?fieldManager=x", ctype: "application/apply-patch+yaml", body: ceBody, want: http.StatusForbidden},
				{as: "bob", method: http.MethodPatch, path: "/clusters/{bobHome}" + r17CE + "/example/status?fieldManager=x", ctype: "application/apply-patch+yaml", body: ceBody, want: http.StatusNotFound},
				{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}" + r17CE + "/example", want: http.StatusNotFound},
				{as: "admin", method: http.MethodGet, path: "/clusters/root" + r17CE + "/example", want: http.StatusOK, hasNot: `"v9"`},
			}},
		attack{finding: "review17:11", name: "a spoofed leftmost X-Forwarded-For through a trusted proxy escapes no throttle",
			after: func(e *attackEnv, vars map[string]string) error {
				// Loopback is a trusted proxy here, as haproxy would be:
				// the address the proxy saw is the rightmost untrusted one,
				// whatever the client wrote before it.
				for i := 0; i < 500; i++ {
					code, _ := e.send(step{method: http.MethodGet, path: "/version", header: map[string]string{
						"Authorization": badToken(), "X-Forwarded-For": fmt.Sprintf("198.51.%d.%d, 203.0.113.170", i/250, i%250)}}, vars)
					switch code {
					case http.StatusTooManyRequests:
						return nil
					case http.StatusUnauthorized:
					default:
						return fmt.Errorf("bad token %d: %d", i, code)
					}
				}
				return fmt.Errorf("500 bad tokens from one address behind rotating spoofed hops, never 429")
			}},
		attack{finding: "review17:12", name: "client replica-hop headers on a provider route forge nothing",
			cleanup: r17Undo,
			before:  r17EnableExample,
			steps: []step{
				{as: "bob", method: http.MethodGet, path: "/services/providers/example/whoami", header: map[string]string{"X-Wharf-Workspace": "{bobHome}",
					"X-Wharf-Replica-Hop": "hub-x", "X-Kedge-User": "alice", "X-Kedge-Groups": "system:masters"}, hasNot: `"User":"alice"`},
				{as: "bob", method: http.MethodGet, path: "/services/providers/example/whoami", header: map[string]string{"X-Wharf-Workspace": "{bobHome}",
					"X-Wharf-Replica-Hop": "hub-x", "X-Kedge-Groups": "system:masters"}, hasNot: `system:masters`},
				{as: "bob", method: http.MethodGet, path: "/services/providers/example/whoami", header: map[string]string{"X-Wharf-Workspace": "{bobHome}",
					"X-Wharf-Replica-Assertion": "eyJ1IjoiYWxpY2UifQ.AAAA", "X-Wharf-Replica-Hop": "hub-x"}, want: http.StatusUnauthorized},
				{method: http.MethodGet, path: "/services/providers/example/whoami", header: map[string]string{"X-Wharf-Workspace": "{aliceHome}",
					"X-Wharf-Replica-Assertion": "eyJ1IjoiYWxpY2UifQ.AAAA", "X-Wharf-Replica-Hop": "hub-x"}, want: http.StatusUnauthorized},
			}},
	)
}
