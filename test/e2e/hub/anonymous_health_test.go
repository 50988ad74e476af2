package hub

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/hub/login"
)

// anonymousDo sends one request to the hub with the headers given and
// nothing else: no token unless a header carries one.
func anonymousDo(t *testing.T, h *hubProc, method, path string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, h.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := h.client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// TestAnonymousHealth (issue 17): probes without a token read /livez,
// /readyz and /healthz of a real hub, as kube-apiserver's do; every other
// anonymous request is the same 401 as before, a workspace's grants to
// system:unauthenticated reach nothing, and the checks' sub-paths,
// /metrics and /debug stay for hub administrators.
func TestAnonymousHealth(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("carol-token,carol,carol-uid\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHub(t, hubOptions{extraArgs: []string{"--token-auth-file", tokens}})
	_, unauthorized := anonymousDo(t, h, http.MethodGet, "/api", nil)
	if !strings.Contains(unauthorized, `"reason":"Unauthorized"`) {
		t.Fatalf("anonymous GET /api: %s", unauthorized)
	}

	// A workspace admin grants everything there to the anonymous
	// identity; carol is bound too, to see when the grant is in effect.
	id := h.createWorkspace("root", "open")
	h.mustApply("root:open", `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: everything}
rules:
- {apiGroups: ["*"], resources: ["*"], verbs: ["*"]}
- {nonResourceURLs: ["*"], verbs: ["*"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: everybody}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: everything}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: system:unauthenticated}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: system:anonymous}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}
`, "apply")
	eventually(t, 30*time.Second, func() error {
		if code, body := h.doAs("carol-token", http.MethodGet, "/clusters/root:open/readyz", ""); code != http.StatusOK {
			return fmt.Errorf("carol's grant not in effect yet: %d %s", code, body)
		}
		return nil
	})

	forbidden := func(verb, p string) string {
		return fmt.Sprintf(`"message":"forbidden: User \"system:anonymous\" cannot %s path \"%s\""`, verb, p)
	}
	for _, tc := range []struct {
		method, path string
		header       map[string]string
		code         int
		has          string // "" with 401: byte for byte the generic 401
	}{
		{method: "GET", path: "/readyz", code: 200, has: "ok"},
		{method: "GET", path: "/livez", code: 200, has: "ok"},
		{method: "GET", path: "/healthz", code: 200, has: "ok"},
		{method: "GET", path: "/readyz?verbose", code: 200, has: "[+]wharf-workspace-index ok"},
		{method: "GET", path: "/livez?verbose&exclude=etcd", code: 200, has: "livez check passed"},
		// As kube-apiserver v1.37 (checked against test/kube): the
		// checks' sub-paths and HEAD are authenticated and then refused.
		{method: "GET", path: "/readyz/etcd", code: 403, has: forbidden("get", "/readyz/etcd")},
		{method: "GET", path: "/livez/ping", code: 403, has: forbidden("get", "/livez/ping")},
		{method: "HEAD", path: "/readyz", code: 403},
		// Impersonation is authorized as for anybody: refused.
		{method: "GET", path: "/readyz", header: map[string]string{"Impersonate-User": "wharf-admin"}, code: 403,
			has: `User \"system:anonymous\" cannot impersonate`},

		{method: "POST", path: "/readyz", code: 401},
		{method: "GET", path: "/readyz", header: map[string]string{"Authorization": "Bearer wrong"}, code: 401},
		{method: "GET", path: "/readyz", header: map[string]string{"Authorization": "Basic Y2Fyb2w6eA=="}, code: 401},
		{method: "GET", path: "/readyz", header: map[string]string{"Cookie": login.SessionCookie + "=forged"}, code: 401},
		{method: "GET", path: "/clusters/root/readyz", code: 401},
		{method: "GET", path: "/clusters/root:open/readyz", code: 401},
		{method: "GET", path: "/clusters/" + id + "/livez", code: 401},
		{method: "GET", path: "/clusters/root:open/api/v1/namespaces", code: 401},
		{method: "GET", path: "/clusters/root:open/metrics", code: 401},
		{method: "GET", path: "/metrics", code: 401},
		{method: "GET", path: "/debug/pprof/", code: 401},
		{method: "GET", path: "/version", code: 401},
		{method: "GET", path: "/", code: 401},
		{method: "GET", path: "/readyz/", code: 401},
		{method: "GET", path: "//readyz", code: 401},
		{method: "GET", path: "/readyz/../metrics", code: 401},
		{method: "GET", path: "/readyz/%2e%2e/metrics", code: 401},
		{method: "GET", path: "/readyz/etcd/../../metrics", code: 401},
		{method: "GET", path: "/healthz/..%2fmetrics", code: 401},
	} {
		code, body := anonymousDo(t, h, tc.method, tc.path, tc.header)
		switch {
		case code != tc.code:
			t.Errorf("%s %s %v: %d %s, want %d", tc.method, tc.path, tc.header, code, body, tc.code)
		case code == http.StatusUnauthorized && body != unauthorized:
			t.Errorf("%s %s %v: 401 %q, want the generic %q", tc.method, tc.path, tc.header, body, unauthorized)
		case tc.has != "" && !strings.Contains(body, tc.has):
			t.Errorf("%s %s: %d %s, want it to contain %s", tc.method, tc.path, code, body, tc.has)
		}
	}

	// What is refused to the anonymous caller still works for the hub
	// administrator.
	for _, p := range []string{"/metrics", "/readyz/etcd"} {
		if code, body, err := h.get(p); err != nil || code != http.StatusOK {
			t.Errorf("admin GET %s: %d %v %.200s", p, code, err, body)
		}
	}
}
