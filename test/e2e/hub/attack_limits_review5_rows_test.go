package hub

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// The longer rows of TestAttackLimitsReview5Held.

// review5Paths are the review's 19 paths (its probe-exist.sh), under
// /clusters/{T}; a caller who may not see {T} gets one 403 for each.
var review5Paths = func() []oracleProbe {
	var out []oracleProbe
	for _, p := range []string{"/api/v1/namespaces/default/configmaps", "/api", "/apis", "/openapi/v2", "/openapi/v3", "/version", "/api/usage", "/api/whoami",
		"/apis/tenancy.wharf.dev/v1alpha1/workspaces", "/healthz", "/readyz", "/metrics", "/.well-known/openid-configuration", "/openid/v1/jwks",
		"/apis/hello.wharf.dev/v1alpha1/greetings", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "/api/v1/namespaces/default/configmaps?watch=1",
		"/apis/nosuch.example/v1", "/ui/"} {
		out = append(out, oracleProbe{name: p, method: http.MethodGet, path: "/clusters/{T}" + p})
	}
	return out
}()

// review5Routes are its probe-exist2.sh requests that name a workspace by
// header, cookie or id: each a 403 for a workspace the caller may not see.
var review5Routes = []oracleProbe{
	{name: "hello whoami, X-Wharf-Workspace", method: http.MethodGet, path: "/services/providers/hello/whoami", header: map[string]string{"X-Wharf-Workspace": "{T}"}},
	{name: "hello whoami, workspace cookie", method: http.MethodGet, path: "/services/providers/hello/whoami", header: map[string]string{"Cookie": "__Host-wharf_workspace={T}"}},
	{name: "hello root, X-Wharf-Workspace", method: http.MethodGet, path: "/services/providers/hello/", header: map[string]string{"X-Wharf-Workspace": "{T}"}},
	{name: "resource-proxy metrics, X-Wharf-Workspace", method: http.MethodGet, path: "/services/providers/resource-proxy/metrics", header: map[string]string{"X-Wharf-Workspace": "{T}"}},
	{name: "namespaces", method: http.MethodGet, path: "/clusters/{T}/api/v1/namespaces"},
}

// review5Pages are its portal requests: the same page for any workspace.
var review5Pages = []oracleProbe{
	{name: "portal", method: http.MethodGet, path: "/ui/?ws={T}"},
	{name: "catalog", method: http.MethodGet, path: "/ui/catalog?ws={T}"},
	{name: "hello's UI file", method: http.MethodGet, path: "/ui/providers/hello/main.js?ws={T}"},
}

// r5Share429 floods GETs at victor's home and at a missing workspace in
// turn (the review's oracle429.sh, 100 at once, two rounds each) and
// compares what came back: the same answers, in shares alike. The shares
// are compared with a wide margin (the review's broken hub gave 4% and
// 67%; alike ones differ by a few points).
func r5Share429(t *testing.T, e *attackEnv) {
	targets := map[string]string{"hidden": e.vars["victorHome"], "missing": r5Missing()}
	forms := map[string]map[string]bool{}
	counts := map[string]*codes{"hidden": {}, "missing": {}}
	block := 72
	for round := 0; round < 2; round++ {
		for _, which := range []string{"hidden", "missing"} {
			ws := targets[which]
			url := e.h.URL + cmPath("/clusters/"+ws)
			var mu sync.Mutex
			flood(100, 3, func(w int) *http.Client { return connsClient(e.h, attackerAddr(block, w), true, false) },
				func(cl *http.Client, w, i int, got *codes) {
					resp, err := cl.Do(r4Req(http.MethodGet, url, e.tokens["mallory"], "", nil))
					form := "ERR"
					if err == nil {
						b, _ := io.ReadAll(resp.Body)
						_ = resp.Body.Close()
						form = fmt.Sprintf("%d retry=%t %s", resp.StatusCode, resp.Header.Get("Retry-After") != "", strings.ReplaceAll(string(b), ws, "{T}"))
					}
					counts[which].add(strings.SplitN(form, " ", 2)[0])
					mu.Lock()
					if forms[which] == nil {
						forms[which] = map[string]bool{}
					}
					forms[which][form] = true
					mu.Unlock()
				})
			block++
		}
	}
	share := map[string]float64{}
	for which, c := range counts {
		answered := c.get("403") + c.get("429")
		if answered > 0 {
			share[which] = float64(c.get("429")) / float64(answered)
		}
		t.Logf("r5:4: %s: %s(429 share %.1f%%)", which, c, 100*share[which])
		for form := range forms[which] {
			switch {
			case form == "ERR":
			case strings.HasPrefix(form, "403 retry=false") && strings.Contains(form, "workspace access not permitted"):
			case strings.HasPrefix(form, "429 retry=true") && strings.Contains(form, `"reason":"TooManyRequests"`):
			default:
				t.Errorf("r5:4: %s: unexpected answer %.300s", which, form)
			}
		}
	}
	// Every distinct answer to one is an answer to the other, when both
	// saw its code.
	for _, code := range []string{"403", "429"} {
		pick := func(which string) []string {
			var out []string
			for f := range forms[which] {
				if strings.HasPrefix(f, code+" ") {
					out = append(out, f)
				}
			}
			sort.Strings(out)
			return out
		}
		h, m := pick("hidden"), pick("missing")
		if len(h) > 0 && len(m) > 0 && strings.Join(h, "\n") != strings.Join(m, "\n") {
			t.Errorf("r5:4: %s answers differ:\nhidden: %v\nmissing: %v", code, h, m)
		}
	}
	if d := share["hidden"] - share["missing"]; d > 0.25 || d < -0.25 {
		t.Errorf("r5:4: 429 shares %.1f%% (hidden) and %.1f%% (missing) tell the workspaces apart", 100*share["hidden"], 100*share["missing"])
	}
}

// r5ResourceProxy: mallory makes two children, each a ResourceProxy for a
// hub-wide custom resource, one aimed at victor's home and one at a missing
// workspace; the proxied lists answer alike (the review's rp route).
func r5ResourceProxy(t *testing.T, e *attackEnv) {
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"things.r5.example.com"},"spec":{"group":"r5.example.com",` +
		`"names":{"plural":"things","singular":"thing","kind":"Thing"},"scope":"Namespaced","versions":[{"name":"v1","served":true,"storage":true,` +
		`"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`
	mustAs(t, e, http.StatusCreated, "admin", http.MethodPost, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
	missing := r5Missing()
	targets := map[string]string{"rp-hidden": e.vars["victorHome"], "rp-missing": missing}
	ws := "/clusters/" + e.vars["malloryHome"]
	for child, target := range targets {
		mustAs(t, e, http.StatusCreated, "mallory", http.MethodPost, ws+wsAPI, childWS(child))
		c := ws + ":" + child
		for _, w := range []struct{ path, body string }{
			{"/apis/providers.wharf.dev/v1alpha1/providerbindings", `{"apiVersion":"providers.wharf.dev/v1alpha1","kind":"ProviderBinding","metadata":{"name":"resource-proxy"},"spec":{"provider":"resource-proxy"}}`},
			{"/apis/rbac.authorization.k8s.io/v1/clusterroles", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"rp-namespaces"},"rules":[{"apiGroups":[""],"resources":["namespaces"],"verbs":["get"]}]}`},
			{"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"rp-namespaces"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"rp-namespaces"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"system:wharf:provider:resource-proxy"}]}`},
			{"/apis/proxy.wharf.dev/v1alpha1/resourceproxies", `{"apiVersion":"proxy.wharf.dev/v1alpha1","kind":"ResourceProxy","metadata":{"name":"things"},"spec":{"target":{"workspace":"` + target + `"},"resources":[{"group":"r5.example.com","version":"v1","resource":"things"}]}}`},
		} {
			eventually(t, 60*time.Second, func() error {
				if code, body := e.req("mallory", http.MethodPost, c+w.path, "", w.body); code != http.StatusCreated && code != http.StatusConflict {
					return fmt.Errorf("%s in %s: %d %.300s", w.path, child, code, body)
				}
				return nil
			})
		}
	}
	got := map[string]string{}
	for child, target := range targets {
		path := ws + ":" + child + "/apis/r5.example.com/v1/namespaces/default/things"
		eventually(t, 90*time.Second, func() error {
			code, body := e.req("mallory", http.MethodGet, path, "", "")
			// Until the route is up the group is unknown (404) or
			// unavailable (503); then the target answers.
			if !strings.Contains(body, `"group":"tenancy.wharf.dev"`) && !strings.Contains(body, "workspace access not permitted") {
				return fmt.Errorf("%d %.300s", code, body)
			}
			got[child] = fmt.Sprintf("%d %s", code, strings.ReplaceAll(strings.ReplaceAll(body, target, "{T}"), child, "{C}"))
			return nil
		})
	}
	t.Logf("r5:5: aimed at victor's home: %.300s", got["rp-hidden"])
	if got["rp-hidden"] != got["rp-missing"] {
		t.Errorf("r5:5: aimed at victor's home:\n%s\naimed at %s:\n%s", got["rp-hidden"], missing, got["rp-missing"])
	}
	for _, g := range got {
		if strings.Contains(g, r5Secret) || strings.Contains(g, e.vars["victorID"]) {
			t.Errorf("r5:5: leaks victor's: %.400s", g)
		}
	}
}

// r5AdminNames is the row of the weak attempt 7. mallory impersonates,
// in her home, an administrator's name (hubadmin, an --admin-user) and
// group (platform, an --admin-group) and, for comparison, a name and a
// group that are nobody's; every answer is the same but for the name. On
// 879c398 hubadmin and platform got 403 "… needs a hub administrator"
// and the others, once bound, 200.
func r5AdminNames(t *testing.T, e *attackEnv) {
	type form struct {
		label  string
		header map[string]string
		name   string // what the answers may differ by
	}
	pairs := [][2]form{
		{{"--admin-user hubadmin", map[string]string{"Impersonate-User": "hubadmin"}, "hubadmin"},
			{"the name nobody-r5", map[string]string{"Impersonate-User": "nobody-r5"}, "nobody-r5"}},
		{{"--admin-group platform", map[string]string{"Impersonate-User": "bot-r5", "Impersonate-Group": "platform"}, "platform"},
			{"the group nogroup-r5", map[string]string{"Impersonate-User": "bot-r5", "Impersonate-Group": "nogroup-r5"}, "nogroup-r5"}},
	}
	home := "/clusters/{malloryHome}"
	requests := []step{
		{method: http.MethodGet, path: cmPath(home)},
		{method: http.MethodPost, path: cmPath(home), body: cmJSON("imp-r5")},
		{method: http.MethodGet, path: cmPath(home) + "/imp-r5"},
		{method: http.MethodGet, path: "/clusters/*/api/v1/configmaps"},
		{method: http.MethodGet, path: cmPath("/clusters/{victorHome}")},
		{method: http.MethodGet, path: home + "/api/whoami"},
	}
	// compare sends each request as both forms and requires one answer:
	// the same code, and the same Status reason and message (or body)
	// once the form's name is replaced.
	compare := func(stage string, wantList int) {
		for _, pair := range pairs {
			for _, r := range requests {
				var got [2]string
				var codes [2]int
				for i, f := range pair {
					s := r
					s.as, s.header = "mallory", f.header
					code, body := e.send(s, e.vars)
					codes[i] = code
					if strings.Contains(body, r5Secret) {
						t.Errorf("r5:7 %s: %s %s as %s leaks victor's: %.300s", stage, s.method, s.path, f.label, body)
					}
					norm := strings.ReplaceAll(body, `"`+f.name+`"`, `"{NAME}"`)
					norm = strings.ReplaceAll(norm, `\"`+f.name+`\"`, `\"{NAME}\"`)
					if st, err := r5StatusOf(norm); err == nil {
						got[i] = fmt.Sprintf("%d %s %s", code, st.Reason, st.Message)
					} else if code == http.StatusOK && s.method == http.MethodGet && strings.HasSuffix(s.path, "/configmaps") {
						got[i] = fmt.Sprintf("%d %s", code, listNames(norm)) // resourceVersions move
					} else {
						got[i] = fmt.Sprintf("%d %s", code, norm)
					}
				}
				where := fmt.Sprintf("r5:7 %s: %s %s", stage, r.method, expand(r.path, e.vars))
				if got[0] != got[1] {
					t.Errorf("%s: %s answers\n%s\nbut %s answers\n%s", where, pair[0].label, got[0], pair[1].label, got[1])
				}
				if r.path == cmPath(home) && r.method == http.MethodGet && codes[0] != wantList {
					t.Errorf("%s as %s: %d, want %d", where, pair[0].label, codes[0], wantList)
				}
				if strings.HasPrefix(r.path, "/clusters/*") || strings.Contains(r.path, "{victorHome}") {
					if codes[0] != http.StatusForbidden {
						t.Errorf("%s as %s: %d, want 403 (never a hub administrator)", where, pair[0].label, codes[0])
					}
				}
			}
		}
	}
	// Unbound: the names hold nothing in her home.
	compare("unbound", http.StatusForbidden)
	// Bound: she lets all four edit her home's default namespace; each
	// then reads and writes there, and still nowhere else.
	rb := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"r5-edit"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},"subjects":[` +
		`{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"hubadmin"},{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"nobody-r5"},` +
		`{"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"platform"},{"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"nogroup-r5"}]}`
	mustAs(t, e, http.StatusCreated, "mallory", http.MethodPost, expand(home, e.vars)+"/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", rb)
	for _, pair := range pairs {
		for _, f := range pair {
			eventually(t, 30*time.Second, func() error {
				if code, body := e.send(step{as: "mallory", method: http.MethodGet, path: cmPath(home) + "?limit=1", header: f.header}, e.vars); code != http.StatusOK {
					return fmt.Errorf("list as %s once bound: %d %.300s", f.label, code, body)
				}
				return nil
			})
		}
	}
	for _, pair := range pairs {
		for i, f := range pair {
			s := step{as: "mallory", method: http.MethodPost, path: cmPath(home), header: f.header, body: cmJSON(fmt.Sprintf("bound-%d-%s", i, strings.ReplaceAll(f.name, ":", "-")))}
			if code, body := e.send(s, e.vars); code != http.StatusCreated {
				t.Errorf("r5:7 bound: create as %s: %d %.300s", f.label, code, body)
			}
		}
	}
	requests = requests[3:] // what stays out of reach
	compare("bound", 0)
	// system:masters is no impersonable group, and the real
	// administrators are still administrators.
	r5Step(t, e, step{as: "mallory", method: http.MethodGet, path: cmPath(home), header: map[string]string{"Impersonate-User": "bot-r5", "Impersonate-Group": "system:masters"}, want: http.StatusForbidden, has: "system:masters"})
	r5Step(t, e, step{as: "mallory", method: http.MethodGet, path: "/clusters/*/api/v1/configmaps", header: map[string]string{"Impersonate-User": "bot-r5", "Impersonate-Group": "system:masters"}, want: http.StatusForbidden})
	for _, who := range []string{"hubadmin", "opsy", "admin"} {
		if code, body := e.req(who, http.MethodGet, "/clusters/*/api/v1/configmaps?limit=1", "", ""); code != http.StatusOK {
			t.Errorf("r5:7: %s, a hub administrator, lists across workspaces: %d %.300s", who, code, body)
		}
	}
}

// listNames reduces a list to the names of its items.
func listNames(body string) string {
	var l struct {
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(body), &l); err != nil {
		return body
	}
	var names []string
	for _, it := range l.Items {
		names = append(names, it.Metadata.Name)
	}
	return strings.Join(names, ",")
}
