package hub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// Rows 10, 11, 14 and 15 of TestAttackLimitsReview5Held.

// r5ResourceVersions is the row of the weak attempt 10. A list's
// resourceVersion is the hub's one etcd revision, as on kcp (one per
// shard): it moves with every tenant's writes, which is the residual side
// channel the README's "Isolation" names. What holds: nothing of victor's
// (objects, names, workspace) reaches mallory, neither in her lists nor in
// a watch of her workspace from resourceVersion 1.
func r5ResourceVersions(t *testing.T, e *attackEnv) {
	mine := "/clusters/{malloryHome}/api/v1/namespaces/kube-system/configmaps?limit=1"
	rv := func() string {
		body := r5Step(t, e, step{as: "mallory", method: http.MethodGet, path: mine, want: http.StatusOK}, "victor-rv", "{victorHome}", "{victorID}")
		var l struct {
			Metadata struct{ ResourceVersion string } `json:"metadata"`
		}
		_ = json.Unmarshal([]byte(body), &l)
		return l.Metadata.ResourceVersion
	}
	before := rv()
	for i := 0; i < 5; i++ {
		mustAs(t, e, http.StatusCreated, "victor", http.MethodPost, cmPath("/clusters/"+e.vars["victorHome"]),
			fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"victor-rv-%d"},"data":{"k":"%s"}}`, i, r5Secret))
	}
	mustAs(t, e, http.StatusCreated, "mallory", http.MethodPost, cmPath("/clusters/"+e.vars["malloryHome"]), cmJSON("mine-rv"))
	after := rv()
	t.Logf("r5:10: her list's resourceVersion %s, then %s after victor's 5 writes and her 1 (the hub-wide revision)", before, after)

	// Watches of her workspace from resourceVersion 1 (410 Gone: too old,
	// which names the hub's revision) and from her list's before victor's
	// writes (her ConfigMap only), each ended by the server after a
	// second: her objects only, none of his.
	for _, path := range []string{
		"/clusters/{malloryHome}/api/v1/configmaps?watch=1&resourceVersion=1&timeoutSeconds=1",
		"/clusters/{malloryHome}/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=1&timeoutSeconds=1",
		"/clusters/{malloryHome}/api/v1/configmaps?watch=1&resourceVersion=1&allowWatchBookmarks=true&timeoutSeconds=1",
		"/clusters/{malloryHome}/api/v1/configmaps?watch=1&resourceVersion=" + before + "&timeoutSeconds=1",
	} {
		sawMine := false
		body := r5Step(t, e, step{as: "mallory", method: http.MethodGet, path: path, want: http.StatusOK}, "victor-rv", "{victorHome}", "{victorID}")
		var types []string
		for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
			var ev struct {
				Type   string
				Object struct {
					Code     int
					Metadata struct {
						Name        string
						Annotations map[string]string
					}
				}
			}
			if line == "" {
				continue
			}
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Errorf("r5:10: %s: event %q: %v", path, line, err)
				continue
			}
			types = append(types, ev.Type)
			switch ev.Type {
			case "ERROR":
				if ev.Object.Code != http.StatusGone {
					t.Errorf("r5:10: %s: error event %s", path, line)
				}
			case "BOOKMARK":
			default:
				if c := ev.Object.Metadata.Annotations["wharf.dev/cluster"]; c != e.vars["malloryID"] {
					t.Errorf("r5:10: %s: event for %q of cluster %q, not hers", path, ev.Object.Metadata.Name, c)
				}
				sawMine = sawMine || ev.Object.Metadata.Name == "mine-rv"
			}
		}
		t.Logf("r5:10: %s: events %v", path, types)
		if strings.Contains(path, "resourceVersion="+before) && !sawMine {
			t.Errorf("r5:10: %s: her own ConfigMap was not delivered: %v", path, types)
		}
	}
}

// r5WhoamiSpam is the row of the weak attempt 11 (the review's
// ws-crowd.sh): mallory's children bind system:authenticated to
// wharf:workspace-access. victor may use them by path but his whoami does
// not list them; hers does (she is bound there by name).
func r5WhoamiSpam(t *testing.T, e *attackEnv) {
	ws := "/clusters/" + e.vars["malloryHome"]
	crb := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"all-view"},` +
		`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"wharf:workspace-access"},` +
		`"subjects":[{"kind":"Group","name":"system:authenticated","apiGroup":"rbac.authorization.k8s.io"}]}`
	var children []string
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("spam-%d", i)
		mustAs(t, e, http.StatusCreated, "mallory", http.MethodPost, ws+wsAPI, childWS(name))
		child := e.vars["malloryHome"] + ":" + name
		children = append(children, child)
		eventually(t, 60*time.Second, func() error {
			if code, body := e.req("mallory", http.MethodPost, "/clusters/"+child+"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", "", crb); code != http.StatusCreated && code != http.StatusConflict {
				return fmt.Errorf("%s: %d %.300s", child, code, body)
			}
			return nil
		})
	}
	for _, child := range children {
		// Open to him: he may use it by its path.
		eventually(t, 30*time.Second, func() error {
			if code, body := e.req("victor", http.MethodGet, "/clusters/"+child+"/api", "", ""); code != http.StatusOK {
				return fmt.Errorf("victor's discovery in %s: %d %.300s", child, code, body)
			}
			return nil
		})
	}
	vw, code, body := e.h.whoamiAs(e.tokens["victor"])
	if code != http.StatusOK || vw.Home == nil || vw.Home.Path != e.vars["victorHome"] {
		t.Fatalf("victor's whoami: %d %.300s", code, body)
	}
	for _, w := range vw.Workspaces {
		if strings.HasPrefix(w.Path, e.vars["malloryHome"]) {
			t.Errorf("r5:11: victor's whoami lists mallory's %s (%d workspaces: %v)", w.Path, len(vw.Workspaces), vw.Workspaces)
		}
	}
	if vw.Truncated || len(vw.Workspaces) == 0 || vw.Workspaces[0].Path != e.vars["victorHome"] {
		t.Errorf("r5:11: victor's whoami list %v (truncated %v), want his home in it", vw.Workspaces, vw.Truncated)
	}
	mw, _, _ := e.h.whoamiAs(e.tokens["mallory"])
	listed := map[string]bool{}
	for _, w := range mw.Workspaces {
		listed[w.Path] = true
	}
	for _, child := range children {
		if !listed[child] {
			t.Errorf("r5:11: mallory's whoami does not list her own %s: %v", child, mw.Workspaces)
		}
	}
}

// r5Traversal sends the review's dot-segment paths under the provider
// routes, plain and encoded, as mallory naming her home: none reaches
// victor's home, another provider's metrics or a file of the hub's host,
// and none fails the hub.
func r5Traversal(t *testing.T, e *attackEnv) {
	vh := e.vars["victorHome"]
	cms := "clusters/" + vh + "/api/v1/namespaces/default/configmaps"
	paths := []string{
		"/services/providers/hello/../../" + cms,
		"/services/providers/hello/%2e%2e/%2e%2e/" + cms,
		"/services/providers/hello/..%2f..%2f" + url.PathEscape(cms),
		"/services/providers/hello/%2e%2e/resource-proxy/metrics",
		"/services/providers/hello/..%2fresource-proxy%2fmetrics",
		"/services/providers/..%2fresource-proxy/metrics",
		"/services/providers/hello/../../../../etc/passwd",
		"/ui/providers/hello/../../../../etc/passwd",
		"/ui/providers/hello/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
		"/ui/providers/hello/..%2f..%2f..%2fetc%2fpasswd",
		"/ui/providers/hello/..%5c..%5c..%5cetc%5cpasswd",
		"/ui/providers/%2e%2e/resource-proxy/main.js",
	}
	for _, p := range paths {
		req, err := http.NewRequest(http.MethodGet, e.h.URL+p, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+e.tokens["mallory"])
		req.Header.Set("X-Wharf-Workspace", e.vars["malloryHome"])
		resp, err := e.h.client().Do(req)
		if err != nil {
			t.Errorf("r5:14: %s: %v", p, err)
			continue
		}
		body := readAll(resp)
		_ = resp.Body.Close()
		t.Logf("r5:14: %s: %d %.80s", p, resp.StatusCode, strings.ReplaceAll(body, "\n", " "))
		for _, leak := range []string{r5Secret, "victor-secret", "root:x:0:", "wharf_resource_proxy", "# HELP"} {
			if strings.Contains(body, leak) {
				t.Errorf("r5:14: %s: %d, the body holds %q: %.300s", p, resp.StatusCode, leak, body)
			}
		}
		if resp.StatusCode >= 500 {
			t.Errorf("r5:14: %s: %d %.300s", p, resp.StatusCode, body)
		}
	}
	hubHealthy(t, e.h)
}

// r5LoginFloods sends 40 token-logins and 40 token-sessions with bogus
// tokens from one address each (the review's floods): past the login
// budget (burst 20) they get 429 with Retry-After, none succeeds, and
// victor's own token-login from another address is served.
func r5LoginFloods(t *testing.T, e *attackEnv) {
	for k, ep := range []string{"/auth/token-login", "/auth/token-session"} {
		got := &codes{}
		retry := 0
		for i := 0; i < 40; i++ {
			var req *http.Request
			if ep == "/auth/token-login" {
				req = r4Req(http.MethodPost, e.h.URL+ep, fmt.Sprintf("bogus-%d-%d", k, i), "", map[string]string{"X-Forwarded-For": fmt.Sprintf("198.51.100.%d", 10+k)})
			} else {
				req = r4Req(http.MethodPost, e.h.URL+ep, "", "token="+fmt.Sprintf("bogus-%d-%d", k, i), map[string]string{
					"X-Forwarded-For": fmt.Sprintf("198.51.100.%d", 10+k), "Content-Type": "application/x-www-form-urlencoded", "Origin": e.h.URL})
			}
			resp, err := e.h.client().Do(req)
			if err != nil {
				got.add("ERR")
				continue
			}
			_ = readAll(resp)
			_ = resp.Body.Close()
			got.add(fmt.Sprint(resp.StatusCode))
			if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "" {
				retry++
			}
		}
		t.Logf("r5:15: %s flood: %s", ep, got)
		if got.get("429") == 0 || retry != got.get("429") {
			t.Errorf("r5:15: %s flood: %s, want 429s, each with Retry-After (%d had one)", ep, got, retry)
		}
		for _, ok := range []string{"200", "201", "303", "500", "502", "503"} {
			if got.get(ok) != 0 {
				t.Errorf("r5:15: %s flood: %d answers %s", ep, got.get(ok), ok)
			}
		}
	}
	req := r4Req(http.MethodPost, e.h.URL+"/auth/token-login", e.tokens["victor"], "", map[string]string{"X-Forwarded-For": "198.51.100.30"})
	resp, err := e.h.client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(resp)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, e.vars["victorHome"]) {
		t.Errorf("r5:15: victor's token-login after the floods: %d %.300s", resp.StatusCode, body)
	}
}
