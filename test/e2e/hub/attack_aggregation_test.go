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

// Rows of the aggregation attack review (ids "agg:<n>"): alice is admin of
// root:a (every verb on apiservices and their status there), the hub admin
// has everything, and two providers run: aggprobe and the same binary as
// resource-proxy, both enabled in root:a and neither in root:b. Each row
// is one attempted bypass of who may make an APIService route where, of
// the deletion protection, or of the routing's isolation.

const (
	aggSvcs   = "/clusters/root:a/apis/apiregistration.k8s.io/v1/apiservices"
	aggProbe1 = aggSvcs + "/v1.probe.example.com"
)

// aggService is an APIService for group/v1 routing to provider (in
// namespace ns), with extra metadata JSON.
func aggService(group, ns, provider, meta string) string {
	if meta != "" {
		meta = "," + meta
	}
	return fmt.Sprintf(`{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"v1.%s"%s},`+
		`"spec":{"group":%q,"version":"v1","groupPriorityMinimum":1000,"versionPriority":15,"service":{"namespace":%q,"name":%q}}}`,
		group, meta, group, ns, provider)
}

type aggRow struct {
	id, what string
	// who: "alice", "admin", or a provider action "provider:<name>:<op>"
	// (op register, register-other, unregister, impersonate).
	who, method, path, body, contentType string
	query                                map[string]string
	code                                 int
	contains                             string
}

func TestAttackAggregation(t *testing.T) {
	t.Parallel()
	h := aggHub(t, hubOptions{}, "aggprobe", "resource-proxy")
	h.createWorkspace("root", "a")
	h.createWorkspace("root", "b")
	h.enableProvider("root:a", "aggprobe")
	h.enableProvider("root:a", "resource-proxy")
	h.mustApply("root:a", `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: apiservice-admin
rules:
- apiGroups: ["apiregistration.k8s.io"]
  resources: ["apiservices", "apiservices/status"]
  verbs: ["*"]
- apiGroups: ["probe.example.com"]
  resources: ["*"]
  verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: alice-apiservices
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: apiservice-admin}
subjects: [{kind: User, name: alice}]
`, "apply")
	// resource-proxy's protected APIService for probe.example.com/v1.
	h.registerProbe("root:a", "resource-proxy", true)

	tokens := map[string]string{"alice": "alice-token", "admin": h.Token}
	forbidden, managed := "only the provider an APIService names in spec.service", "is managed by a ResourceProxy; delete the ResourceProxy instead"
	toAgg := aggService("evil.example.com", "wharf-providers", "aggprobe", "")
	rows := []aggRow{
		{id: "agg:1", what: "workspace admin creates an APIService routing to a provider", who: "alice", method: "POST", path: aggSvcs, body: toAgg, code: 403, contains: forbidden},
		{id: "agg:2", what: "hub admin creates one", who: "admin", method: "POST", path: aggSvcs, body: toAgg, code: 403, contains: forbidden},
		{id: "agg:3", what: "dry-run create", who: "alice", method: "POST", path: aggSvcs + "?dryRun=All", body: toAgg, code: 403, contains: forbidden},
		{id: "agg:4", what: "server-side apply creates one", who: "alice", method: "PATCH", path: aggSvcs + "/v1.evil.example.com?fieldManager=x&force=true",
			body: toAgg, contentType: "application/apply-patch+yaml", code: 403, contains: forbidden},
		{id: "agg:5", what: "update-with-create (PUT of a new name)", who: "alice", method: "PUT", path: aggSvcs + "/v1.evil.example.com", body: toAgg, code: 404},
		{id: "agg:6", what: "spec.service outside wharf-providers", who: "alice", method: "POST", path: aggSvcs,
			body: aggService("evil.example.com", "default", "aggprobe", ""), code: 422, contains: `spec.service.namespace: Unsupported value`},
		{id: "agg:7", what: "a group the hub serves", who: "alice", method: "POST", path: aggSvcs,
			body: aggService("rbac.authorization.k8s.io", "wharf-providers", "aggprobe", ""), code: 422, contains: "reserved"},
		{id: "agg:8", what: "a local APIService (no service) shadowing a group", who: "alice", method: "POST", path: aggSvcs,
			body: `{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"v1.evil.example.com"},"spec":{"group":"evil.example.com","version":"v1","groupPriorityMinimum":1000,"versionPriority":15}}`,
			code: 422, contains: "spec.service: Required value"},
		{id: "agg:9", what: "repoint the protected APIService (merge patch)", who: "alice", method: "PATCH", path: aggProbe1,
			body: `{"spec":{"service":{"name":"aggprobe"}}}`, contentType: "application/merge-patch+json", code: 403, contains: forbidden},
		{id: "agg:10", what: "repoint by JSON patch", who: "admin", method: "PATCH", path: aggProbe1,
			body: `[{"op":"replace","path":"/spec/service/name","value":"aggprobe"}]`, contentType: "application/json-patch+json", code: 403, contains: forbidden},
		{id: "agg:11", what: "drop the protection label", who: "alice", method: "PATCH", path: aggProbe1,
			body: `{"metadata":{"labels":{"wharf.dev/protected":null}}}`, contentType: "application/merge-patch+json", code: 403, contains: forbidden},
		{id: "agg:12", what: "dry-run repoint", who: "alice", method: "PATCH", path: aggProbe1 + "?dryRun=All",
			body: `{"spec":{"service":{"name":"aggprobe"}}}`, contentType: "application/merge-patch+json", code: 403, contains: forbidden},
		{id: "agg:13", what: "server-side apply repoint", who: "alice", method: "PATCH", path: aggProbe1 + "?fieldManager=x&force=true",
			body:        aggService("probe.example.com", "wharf-providers", "aggprobe", `"labels":{"wharf.dev/protected":"resource-proxy"}`),
			contentType: "application/apply-patch+yaml", code: 403, contains: forbidden},
		{id: "agg:14", what: "claim Available through status", who: "alice", method: "PATCH", path: aggProbe1 + "/status",
			body: `{"status":{"conditions":[{"type":"Available","status":"True","reason":"Passed"}]}}`, contentType: "application/merge-patch+json",
			code: 403, contains: "kept by the hub"},
		{id: "agg:15", what: "delete the protected APIService", who: "alice", method: "DELETE", path: aggProbe1, code: 403, contains: managed},
		{id: "agg:16", what: "hub admin deletes it", who: "admin", method: "DELETE", path: aggProbe1, code: 403, contains: managed},
		{id: "agg:17", what: "dry-run delete", who: "alice", method: "DELETE", path: aggProbe1 + "?dryRun=All", code: 403, contains: managed},
		{id: "agg:18", what: "deletecollection", who: "alice", method: "DELETE", path: aggSvcs, code: 403, contains: managed},
		{id: "agg:19", what: "a provider points an APIService at another provider", who: "provider:resource-proxy:register-other",
			query: map[string]string{"service": "aggprobe"}, code: 403, contains: forbidden},
		{id: "agg:20", what: "a provider registers where it is not enabled", who: "provider:aggprobe:register",
			query: map[string]string{"ws": "root:b"}, code: 403},
		{id: "agg:21", what: "a provider sets another provider's protection label", who: "provider:aggprobe:register",
			query: map[string]string{"group": "other.example.com", "label": "resource-proxy"}, code: 403, contains: "may only be set by provider"},
		{id: "agg:22", what: "provider impersonates a plain user", who: "provider:aggprobe:impersonate",
			query: map[string]string{"ws": "root:a", "user": "alice"}, code: 403},
		{id: "agg:23", what: "provider impersonates a workspace with a group", who: "provider:aggprobe:impersonate",
			query: map[string]string{"ws": "root:a", "user": "wharf:workspace:root:b", "group": "system:masters"}, code: 403},
		{id: "agg:24", what: "provider impersonates a workspace where it is not enabled", who: "provider:aggprobe:impersonate",
			query: map[string]string{"ws": "root:b", "user": "wharf:workspace:root:a"}, code: 403},
		{id: "agg:25", what: "provider impersonates the bare prefix", who: "provider:aggprobe:impersonate",
			query: map[string]string{"ws": "root:a", "user": "wharf:workspace:"}, code: 403},
		{id: "agg:26", what: "provider impersonates a workspace identity where enabled: RBAC then decides", who: "provider:aggprobe:impersonate",
			query: map[string]string{"ws": "root:a", "user": "wharf:workspace:root:b"}, code: 403, contains: `User "wharf:workspace:root:b" cannot list resource "namespaces"`},
		{id: "agg:27", what: "another workspace reaches the group", who: "admin", method: "GET", path: "/clusters/root:b/apis/probe.example.com/v1/probes", code: 404},
		{id: "agg:29", what: "dot segments out of the routed group version", who: "admin", method: "GET",
			path: "/clusters/root:a/apis/probe.example.com/v1/probes/../../../../api/v1/namespaces", code: 404},
		{id: "agg:30", what: "encoded dot segments", who: "admin", method: "GET",
			path: "/clusters/root:a/apis/probe.example.com/v1/probes/%2E%2E%2F%2E%2E%2Fv2", code: 404},
		{id: "agg:28", what: "the wildcard reaches the group", who: "admin", method: "GET", path: "/clusters/*/apis/probe.example.com/v1/probes", code: 404},
	}
	for _, r := range rows {
		code, body := h.aggAttempt(t, tokens, r)
		if code != r.code || (r.contains != "" && !strings.Contains(body, r.contains)) {
			t.Errorf("%s %s: %d %s, want %d %q", r.id, r.what, code, body, r.code, r.contains)
		}
	}
	// agg:29-30: nothing outside the routed group version reached a
	// provider.
	for _, p := range []string{"aggprobe", "resource-proxy"} {
		for _, r := range h.probeLog("root:a", p) {
			if !strings.HasPrefix(r.Path, "/apis/probe.example.com/v1") || strings.Contains(r.Path, "..") {
				t.Errorf("%s got %s %s", p, r.Method, r.Path)
			}
		}
	}
	// None of it moved the protected APIService.
	if out := h.mustKubectl("root:a", "get", "apiservice", "v1.probe.example.com", "-o", "jsonpath={.spec.service.name}"); out != "resource-proxy" {
		t.Errorf("the protected APIService now routes to %q", out)
	}
	// The control rows: a provider may register its own APIService where
	// it is enabled, and an update that keeps the routing is RBAC's
	// business.
	if code, body := h.backendAs(h.Token, http.MethodPost, "root:a", "aggprobe", "/register?group=other.example.com"); code != http.StatusOK {
		t.Errorf("aggprobe registers its own: %d %s", code, body)
	}
	if code, body, _ := h.reqAs("alice-token", http.MethodPatch, aggSvcs+"/v1.other.example.com", http.Header{"Content-Type": {"application/merge-patch+json"}},
		`{"metadata":{"annotations":{"note":"mine"}}}`); code != http.StatusOK {
		t.Errorf("alice annotates: %d %s", code, body)
	}
	// The provider itself may delete its protected APIService.
	if code, body := h.backendAs(h.Token, http.MethodDelete, "root:a", "resource-proxy", "/register"); code != http.StatusOK {
		t.Errorf("resource-proxy deletes its APIService: %d %s", code, body)
	}
	eventually(t, 30*time.Second, func() error {
		if out, err := h.kubectl("root:a", "get", "apiservice", "v1.probe.example.com"); err == nil {
			return fmt.Errorf("still there: %s", out)
		}
		return nil
	})
}

// aggAttempt performs one row and returns the code and body that tell.
func (h *hubProc) aggAttempt(t *testing.T, tokens map[string]string, r aggRow) (int, string) {
	t.Helper()
	if rest, ok := strings.CutPrefix(r.who, "provider:"); ok {
		name, op, _ := strings.Cut(rest, ":")
		q := url.Values{}
		for k, v := range r.query {
			q.Set(k, v)
		}
		switch op {
		case "register", "register-other":
			return h.backendAs(h.Token, http.MethodPost, "root:a", name, "/register?"+q.Encode())
		case "impersonate":
			code, body := h.backendAs(h.Token, http.MethodGet, "root:a", name, "/impersonate?"+q.Encode())
			if code != http.StatusOK {
				return code, body
			}
			var out struct {
				Code    int
				Message string
			}
			if err := json.Unmarshal([]byte(body), &out); err != nil {
				t.Fatal(err)
			}
			return out.Code, out.Message
		}
		t.Fatalf("unknown provider op %q", op)
	}
	hdr := http.Header{}
	if r.contentType != "" {
		hdr.Set("Content-Type", r.contentType)
	}
	code, body, _ := h.reqAs(tokens[r.who], r.method, r.path, hdr, r.body)
	return code, body
}
