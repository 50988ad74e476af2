package hub

import "net/http"

// Rows of attack review 17 on the metrics-only identity (findings
// "review17:metrics/<n>"). The ServiceMonitor scrapes with a token in
// system:monitoring ("metrics"), which may GET /metrics and the health
// checks' sub-paths outside every workspace and nothing else. bob, admin of
// his home, tries to become such a scraper (impersonating the group, in
// his home and in root; granting the group in his home), and the scraper's
// token is tried on everything it must not reach.
func init() {
	const pprofLeak = "goroutine "
	imp := func(user string, groups ...string) http.Header {
		h := http.Header{"Impersonate-User": {user}}
		for _, g := range groups {
			h.Add("Impersonate-Group", g)
		}
		return h
	}
	registerAttacks(
		attack{finding: "review17:metrics/1", name: "the scraper reads /metrics and the verbose health checks", steps: []step{
			{as: "metrics", method: http.MethodGet, path: "/metrics", want: http.StatusOK, has: "# HELP"},
			{as: "metrics", method: http.MethodGet, path: "/readyz/etcd", want: http.StatusOK},
			{as: "metrics", method: http.MethodGet, path: "/livez/ping", want: http.StatusOK},
			{as: "metrics", method: http.MethodGet, path: "/healthz?verbose", want: http.StatusOK},
		}},
		attack{finding: "review17:metrics/2", name: "the scraper gets no pprof, flags or other process paths", steps: []step{
			{as: "metrics", method: http.MethodGet, path: "/debug/pprof/", want: http.StatusForbidden, hasNot: pprofLeak},
			{as: "metrics", method: http.MethodGet, path: "/debug/pprof/goroutine?debug=2", want: http.StatusForbidden, hasNot: pprofLeak},
			{as: "metrics", method: http.MethodPut, path: "/debug/flags/v", body: "9", ctype: "text/plain", want: http.StatusForbidden},
			{as: "metrics", method: http.MethodGet, path: "/flagz", want: http.StatusForbidden},
			{as: "metrics", method: http.MethodGet, path: "/statusz", want: http.StatusForbidden},
			{as: "metrics", method: http.MethodGet, path: "/readyz/../debug/pprof/", want: 0, hasNot: pprofLeak},
			{as: "metrics", method: http.MethodGet, path: "/readyz/%2e%2e/debug/pprof/heap", want: 0, hasNot: pprofLeak},
			{as: "metrics", method: http.MethodPost, path: "/metrics", want: http.StatusForbidden},
		}},
		attack{finding: "review17:metrics/3", name: "the scraper reaches nothing under /clusters/ and nothing in a workspace", steps: []step{
			{as: "metrics", method: http.MethodGet, path: "/clusters/root/metrics", want: http.StatusForbidden, hasNot: "# HELP"},
			{as: "metrics", method: http.MethodGet, path: "/clusters/*/metrics", want: http.StatusForbidden, hasNot: "# HELP"},
			{as: "metrics", method: http.MethodGet, path: "/clusters/{bobHome}/metrics", want: http.StatusForbidden, hasNot: "# HELP"},
			{as: "metrics", method: http.MethodGet, path: "/clusters/{bobHome}/readyz/etcd", want: http.StatusForbidden},
			{as: "metrics", method: http.MethodGet, path: "/clusters/{aliceHome}/api/v1/namespaces", want: http.StatusForbidden},
			{as: "metrics", method: http.MethodGet, path: "/api/v1/namespaces/default/configmaps", want: http.StatusForbidden},
			{as: "metrics", method: http.MethodGet, path: "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases", want: http.StatusForbidden},
			{as: "metrics", method: http.MethodGet, path: "/apis/tenancy.wharf.dev/v1alpha1/workspaces", want: http.StatusForbidden},
			{as: "metrics", method: http.MethodGet, path: "/clusters/*/api/v1/secrets", want: http.StatusForbidden},
		}},
		attack{finding: "review17:metrics/4", name: "the scraper cannot impersonate", steps: []step{
			{as: "metrics", method: http.MethodGet, path: "/api/v1/namespaces", header: map[string]string{"Impersonate-User": "bob"}, want: http.StatusForbidden},
			{as: "metrics", method: http.MethodGet, path: "/metrics", addHeader: imp("wharf-metrics", "system:masters"), want: http.StatusForbidden, hasNot: "# HELP"},
			{as: "metrics", method: http.MethodGet, path: "/clusters/{bobHome}/api/v1/namespaces", header: map[string]string{"Impersonate-User": "bob"}, want: http.StatusForbidden},
		}},
		attack{finding: "review17:metrics/5", name: "a workspace admin impersonating system:monitoring gets no /metrics", steps: []step{
			{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/metrics", addHeader: imp("bob", "system:monitoring"), want: http.StatusForbidden, hasNot: "# HELP"},
			{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/readyz/etcd", addHeader: imp("bob", "system:monitoring"), want: http.StatusForbidden},
			{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/metrics", addHeader: imp("wharf-metrics", "system:monitoring"), want: http.StatusForbidden, hasNot: "# HELP"},
			{as: "bob", method: http.MethodGet, path: "/metrics", addHeader: imp("bob", "system:monitoring"), want: http.StatusForbidden, hasNot: "# HELP"},
			{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/api/v1/namespaces", addHeader: imp("bob", "system:monitoring"), want: http.StatusForbidden},
			{as: "bob", method: http.MethodGet, path: "/metrics", want: http.StatusForbidden, hasNot: "# HELP"},
		}},
		attack{finding: "review17:metrics/6", name: "granting system:monitoring in one's home opens no process path", steps: []step{
			{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}/apis/rbac.authorization.k8s.io/v1/clusterroles",
				body: `{"metadata":{"name":"{n}-all"},"rules":[{"verbs":["*"],"nonResourceURLs":["*"]}]}`, want: http.StatusCreated},
			{as: "bob", method: http.MethodPost, path: "/clusters/{bobHome}/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
				body: `{"metadata":{"name":"{n}-mon"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"{n}-all"},"subjects":[{"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":"system:monitoring"},{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"bob"}]}`, want: http.StatusCreated},
			{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/metrics", want: http.StatusForbidden, hasNot: "# HELP"},
			{as: "bob", method: http.MethodGet, path: "/clusters/{bobHome}/debug/pprof/", want: http.StatusForbidden, hasNot: pprofLeak},
			{as: "metrics", method: http.MethodGet, path: "/clusters/{bobHome}/metrics", want: http.StatusForbidden, hasNot: "# HELP"},
			{as: "metrics", method: http.MethodGet, path: "/clusters/{bobHome}/debug/pprof/", want: http.StatusForbidden, hasNot: pprofLeak},
			{as: "metrics", method: http.MethodGet, path: "/clusters/{bobHome}/api/v1/namespaces", want: http.StatusForbidden},
		}},
	)
}
