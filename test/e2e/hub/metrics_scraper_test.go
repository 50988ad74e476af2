package hub

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/hub/home"
)

// scraperTokens: wharf-metrics is the chart's scraper identity, in
// upstream's system:monitoring group; bob is a person, admin of his home.
const scraperTokens = `metrics-token,wharf-metrics,wharf-metrics-uid,"system:monitoring"
bob-token,bob,bob-uid,""
`

// TestMetricsScraper runs a real hub with a static-token scraper in
// system:monitoring: it reads /metrics and the verbose health checks and
// nothing else, and a workspace admin cannot become one (impersonation,
// his own service-account token, RBAC he writes in his workspace).
// Run it alone: go test -count=1 -run TestMetricsScraper ./test/e2e/hub/
func TestMetricsScraper(t *testing.T) {
	t.Parallel()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte(scraperTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHub(t, hubOptions{extraArgs: []string{"--token-auth-file", tokens}})
	if w, code, body := h.whoamiAs("bob-token"); code != http.StatusOK || w.Home == nil {
		t.Fatalf("bob's whoami: %d %s", code, body)
	}
	bobHome := string(home.PathOf("bob"))
	// plain is a workspace that grants the scraper nothing.
	h.createWorkspace("root", "plain")

	// bob, admin of his home, does what he can there: a service account
	// with every verb on every resource, and every non-resource URL for the scraper group
	// and for himself.
	h.mustKubectl(bobHome, "create", "serviceaccount", "prom", "-n", "default")
	h.mustKubectl(bobHome, "create", "clusterrole", "everything", "--verb=*", "--resource=*.*")
	h.mustKubectl(bobHome, "create", "clusterrolebinding", "prom-admin", "--clusterrole=everything", "--serviceaccount=default:prom")
	h.mustKubectl(bobHome, "create", "clusterrole", "all-paths", "--verb=*", "--non-resource-url=*")
	h.mustKubectl(bobHome, "create", "clusterrolebinding", "monitoring-all", "--clusterrole=all-paths", "--group=system:monitoring", "--user=bob", "--serviceaccount=default:prom")
	saToken := h.mustKubectl(bobHome, "create", "token", "prom", "-n", "default")
	// RBAC reaches the authorizer through a watch: wait until the service
	// account's grant works, so the denials below are not timing.
	eventually(t, 30*time.Second, func() error {
		if code, body := h.doAs(saToken, http.MethodGet, "/clusters/"+bobHome+"/api/v1/namespaces/default/configmaps", ""); code != http.StatusOK {
			return fmt.Errorf("%d %s", code, body)
		}
		return nil
	})

	req := func(token, method, path string, hdr http.Header) (int, string) {
		r, err := http.NewRequest(method, h.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Header = hdr.Clone()
		if r.Header == nil {
			r.Header = http.Header{}
		}
		r.Header.Set("Authorization", "Bearer "+token)
		resp, err := h.client().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, readAll(resp)
	}
	imp := func(user string, groups ...string) http.Header {
		hd := http.Header{"Impersonate-User": {user}}
		for _, g := range groups {
			hd.Add("Impersonate-Group", g)
		}
		return hd
	}
	for _, tc := range []struct {
		name         string
		token        string
		method, path string
		hdr          http.Header
		want         int
		has          string
	}{
		{"scraper reads /metrics", "metrics-token", http.MethodGet, "/metrics", nil, http.StatusOK, "# HELP"},
		{"scraper reads /readyz/etcd", "metrics-token", http.MethodGet, "/readyz/etcd", nil, http.StatusOK, "ok"},
		{"scraper reads verbose /readyz", "metrics-token", http.MethodGet, "/readyz?verbose", nil, http.StatusOK, "[+]etcd ok"},
		{"scraper reads /livez/ping", "metrics-token", http.MethodGet, "/livez/ping", nil, http.StatusOK, "ok"},

		{"no pprof", "metrics-token", http.MethodGet, "/debug/pprof/", nil, http.StatusForbidden, `"reason":"Forbidden"`},
		{"no pprof heap", "metrics-token", http.MethodGet, "/debug/pprof/heap?debug=1", nil, http.StatusForbidden, ""},
		{"no log level", "metrics-token", http.MethodPut, "/debug/flags/v", nil, http.StatusForbidden, ""},
		{"no flagz", "metrics-token", http.MethodGet, "/flagz", nil, http.StatusForbidden, ""},
		{"no metrics under /clusters/root", "metrics-token", http.MethodGet, "/clusters/root/metrics", nil, http.StatusForbidden, ""},
		{"no metrics under /clusters/*", "metrics-token", http.MethodGet, "/clusters/*/metrics", nil, http.StatusForbidden, ""},
		{"no metrics in bob's home, where bob granted the group everything", "metrics-token", http.MethodGet, "/clusters/" + bobHome + "/metrics", nil, http.StatusForbidden, ""},
		{"nothing in bob's home", "metrics-token", http.MethodGet, "/clusters/" + bobHome + "/api/v1/namespaces", nil, http.StatusForbidden, ""},
		// In bob's home the group holds what bob bound to it (his own
		// workspace, his choice); elsewhere the built-in grant adds nothing.
		{"no discovery in a workspace", "metrics-token", http.MethodGet, "/clusters/root:plain/api", nil, http.StatusForbidden, ""},
		{"no metrics in a workspace", "metrics-token", http.MethodGet, "/clusters/root:plain/metrics", nil, http.StatusForbidden, ""},
		{"no readyz/etcd in a workspace", "metrics-token", http.MethodGet, "/clusters/root:plain/readyz/etcd", nil, http.StatusForbidden, ""},
		{"no namespaces in a workspace", "metrics-token", http.MethodGet, "/clusters/root:plain/api/v1/namespaces", nil, http.StatusForbidden, ""},
		{"nothing in root", "metrics-token", http.MethodGet, "/api/v1/namespaces", nil, http.StatusForbidden, ""},
		{"no workspaces", "metrics-token", http.MethodGet, "/apis/tenancy.wharf.dev/v1alpha1/workspaces", nil, http.StatusForbidden, ""},
		{"no impersonating bob", "metrics-token", http.MethodGet, "/api/v1/namespaces", imp("bob"), http.StatusForbidden, ""},
		{"no impersonating an admin group", "metrics-token", http.MethodGet, "/metrics", imp("wharf-metrics", "system:masters"), http.StatusForbidden, ""},

		{"bob has no /metrics", "bob-token", http.MethodGet, "/metrics", nil, http.StatusForbidden, ""},
		{"bob's grant does not reach his home's /metrics", "bob-token", http.MethodGet, "/clusters/" + bobHome + "/metrics", nil, http.StatusForbidden, ""},
		{"bob impersonating the group in his home", "bob-token", http.MethodGet, "/clusters/" + bobHome + "/metrics", imp("bob", "system:monitoring"), http.StatusForbidden, ""},
		{"bob impersonating the group, readyz/etcd in his home", "bob-token", http.MethodGet, "/clusters/" + bobHome + "/readyz/etcd", imp("bob", "system:monitoring"), http.StatusForbidden, ""},
		{"bob impersonating the scraper in his home", "bob-token", http.MethodGet, "/clusters/" + bobHome + "/metrics", imp("wharf-metrics", "system:monitoring"), http.StatusForbidden, ""},
		{"bob impersonating the group without a prefix", "bob-token", http.MethodGet, "/metrics", imp("bob", "system:monitoring"), http.StatusForbidden, ""},
		{"bob's service account", saToken, http.MethodGet, "/metrics", nil, http.StatusForbidden, ""},
		{"bob's service account in his home", saToken, http.MethodGet, "/clusters/" + bobHome + "/metrics", nil, http.StatusForbidden, ""},
		{"bob's service account impersonating the group", saToken, http.MethodGet, "/clusters/" + bobHome + "/metrics", imp("bob", "system:monitoring"), http.StatusForbidden, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := req(tc.token, tc.method, tc.path, tc.hdr)
			if code != tc.want {
				t.Fatalf("%s %s: %d, want %d\n%s", tc.method, tc.path, code, tc.want, body)
			}
			if tc.has != "" && !strings.Contains(body, tc.has) {
				t.Fatalf("%s %s: body lacks %q\n%s", tc.method, tc.path, tc.has, body)
			}
			if tc.want != http.StatusOK && strings.Contains(body, "# HELP") {
				t.Fatalf("%s %s: denial holds metrics\n%s", tc.method, tc.path, body)
			}
		})
	}
}
