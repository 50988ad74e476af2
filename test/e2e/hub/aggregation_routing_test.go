package hub

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestAggregationRouting: a provider's APIService in root:a routes a's
// probe.example.com/v1 to it, after a's RBAC, with exactly the identity
// headers and the original path; b neither sees nor reaches the group; a
// direct backend call with a forged original path is refused by the
// provider; kubectl lists and gets through it.
func TestAggregationRouting(t *testing.T) {
	t.Parallel()
	h := aggHub(t, hubOptions{}, "aggprobe")
	idA := h.createWorkspace("root", "a")
	h.createWorkspace("root", "b")
	h.enableProvider("root:a", "aggprobe")
	h.registerProbe("root:a", "aggprobe", false)

	// Available once the hub's discovery check passed, and then in a's
	// discovery: kubectl finds the resource type.
	eventually(t, 90*time.Second, func() error {
		st, reason, err := h.apiServiceCondition("root:a")
		if err != nil || st != "True" || reason != "Passed" {
			return fmt.Errorf("available %q %q %v", st, reason, err)
		}
		return nil
	})
	out := h.mustKubectl("root:a", "get", "apiservices")
	if !strings.Contains(out, "NAME") || !strings.Contains(out, "SERVICE") || !strings.Contains(out, "AVAILABLE") ||
		!strings.Contains(out, "v1.probe.example.com   wharf-providers/aggprobe   True") {
		t.Errorf("kubectl get apiservices:\n%s", out)
	}
	eventually(t, 60*time.Second, func() error {
		out, err := h.kubectl("root:a", "--cache-dir", t.TempDir(), "api-resources", "--api-group", "probe.example.com")
		if err != nil || !strings.Contains(out, "probes") || !strings.Contains(out, "probe.example.com/v1") {
			return fmt.Errorf("api-resources: %v %s", err, out)
		}
		return nil
	})
	if out := h.mustKubectl("root:a", "--cache-dir", t.TempDir(), "get", "probes"); !strings.Contains(out, "echo") {
		t.Errorf("kubectl get probes: %s", out)
	}
	if out := h.mustKubectl("root:a", "get", "probe", "echo", "-o", "jsonpath={.spec.tenant} {.spec.originalPath} {.spec.authorization}"); out !=
		"root:a /clusters/root:a/apis/probe.example.com/v1/probes/echo false" {
		t.Errorf("echo as admin: %s", out)
	}
	if out, err := h.kubectl("root:a", "get", "probe", "nope"); err == nil || !strings.Contains(out, `probes.probe.example.com "nope" not found`) {
		t.Errorf("get nope: %v %s", err, out)
	}

	// Another workspace: not in discovery, 404 on the path.
	if out, err := h.kubectl("root:b", "--cache-dir", t.TempDir(), "api-resources", "--api-group", "probe.example.com"); err != nil || strings.Contains(out, "probes") {
		t.Errorf("api-resources in b: %v %s", err, out)
	}
	for _, p := range []string{"/apis/probe.example.com/v1/probes", "/apis/probe.example.com/v1", "/apis/probe.example.com"} {
		if code, body, _ := h.get("/clusters/root:b" + p); code != http.StatusNotFound {
			t.Errorf("%s in b: %d %s", p, code, body)
		}
	}
	if code, body, _ := h.get("/clusters/root:b/apis"); code != http.StatusOK || strings.Contains(body, "probe.example.com") {
		t.Errorf("/apis in b: %d %s", code, body)
	}
	if code, body, _ := h.get("/clusters/root:a/apis"); code != http.StatusOK || !strings.Contains(body, "probe.example.com") {
		t.Errorf("/apis in a: %d %s", code, body)
	}

	// alice has no grant in a: RBAC denies before the provider sees
	// anything.
	before := len(h.probeLog("root:a", "aggprobe"))
	for _, p := range []string{"/probes", "/probes/echo"} {
		if code, body, _ := h.reqAs("alice-token", http.MethodGet, "/clusters/root:a/apis/probe.example.com/v1"+p, nil, ""); code != http.StatusForbidden ||
			!strings.Contains(body, `"reason":"Forbidden"`) {
			t.Errorf("alice %s: %d %s", p, code, body)
		}
	}
	for _, r := range h.probeLog("root:a", "aggprobe")[before:] {
		if r.Headers.Get("X-Kedge-User") == "alice" {
			t.Errorf("a request RBAC denied reached the provider: %+v", r)
		}
	}

	// Granted, alice's request carries exactly her identity, whatever she
	// forges, and none of her credentials.
	h.mustApply("root:a", `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: probe-reader
rules:
- apiGroups: ["probe.example.com"]
  resources: ["probes"]
  verbs: ["get", "list"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: alice-probes
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: probe-reader}
subjects: [{kind: User, name: alice}]
`, "apply")
	forged := http.Header{
		"X-Kedge-User": {"mallory"}, "x-kedge-groups": {"system:masters"}, "X-KEDGE-TENANT": {"root"},
		"X-Kedge-Cluster": {"evil"}, "X-Kedge-Original-Path": {"/clusters/root/apis/x"}, "X_Kedge_User": {"m2"},
		"Connection": {"X-Kedge-User"}, "Cookie": {"__Host-wharf_session=stolen"}, "X-Wharf-Original-Path": {"/forged"},
		"X-Wharf-Replica-Assertion": {"forged"},
	}
	wantHeaders := http.Header{
		"X-Kedge-User": {"alice"}, "X-Kedge-Groups": {"devs", "system:authenticated"}, "X-Kedge-Tenant": {"root:a"},
		"X-Kedge-Cluster": {idA}, "X-Kedge-Original-Path": {"/clusters/root:a/apis/probe.example.com/v1/probes/echo"},
	}
	var last probeRequest
	eventually(t, 30*time.Second, func() error {
		code, echo, body := h.getEcho("alice-token", "root:a", nil)
		if code != http.StatusOK || echo.User != "alice" {
			return fmt.Errorf("alice echo: %d %s", code, body)
		}
		return nil
	})
	for name, hdr := range map[string]http.Header{"plain": nil, "forged": forged} {
		code, echo, body := h.getEcho("alice-token", "root:a", hdr)
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", name, code, body)
		}
		if echo.User != "alice" || echo.Tenant != "root:a" || echo.Cluster != idA || echo.Authorization {
			t.Errorf("%s: echo %+v", name, echo)
		}
		log := h.probeLog("root:a", "aggprobe")
		last = log[len(log)-1]
		if got := kedgeOnly(last.Headers); !reflect.DeepEqual(got, wantHeaders) {
			t.Errorf("%s: provider got X-Kedge-* %v, want %v", name, got, wantHeaders)
		}
		for _, k := range []string{"Authorization", "Cookie", "X-Wharf-Original-Path", "X-Wharf-Replica-Assertion", "Impersonate-User"} {
			if v := last.Headers.Values(k); len(v) > 0 {
				t.Errorf("%s: provider got %s: %v", name, k, v)
			}
		}
	}

	// The query is kept, the /clusters prefix removed.
	if code, body, _ := h.reqAs("alice-token", http.MethodGet, "/clusters/root:a/apis/probe.example.com/v1/probes?limit=5", nil, ""); code != http.StatusOK {
		t.Errorf("list with query: %d %s", code, body)
	}
	log := h.probeLog("root:a", "aggprobe")
	if l := log[len(log)-1]; l.Path != "/apis/probe.example.com/v1/probes" || l.Query != "limit=5" {
		t.Errorf("provider saw %s ? %s", l.Path, l.Query)
	}

	// A direct backend call skipped a's RBAC: it never carries the
	// original path (the hub strips a forged one), so the provider 404s.
	req := http.Header{"X-Wharf-Workspace": {"root:a"}, "X-Kedge-Original-Path": {"/clusters/root:a/apis/probe.example.com/v1/probes"},
		"X-Wharf-Original-Path": {"/clusters/root:a/apis/probe.example.com/v1/probes"}}
	// (As the admin: the backend route wants workspace access, which
	// alice's grant on probes does not give.)
	n := len(h.probeLog("root:a", "aggprobe"))
	if code, body, _ := h.reqAs(h.Token, http.MethodGet, "/services/providers/aggprobe/apis/probe.example.com/v1/probes", req, ""); code != http.StatusNotFound {
		t.Errorf("direct backend call: %d %s", code, body)
	}
	log = h.probeLog("root:a", "aggprobe")
	if len(log) != n+1 {
		t.Fatalf("direct call: %d new requests at the provider", len(log)-n)
	}
	if l := log[len(log)-1]; l.Path != "/apis/probe.example.com/v1/probes" || l.Headers.Get("X-Kedge-Original-Path") != "" || l.Headers.Get("X-Wharf-Original-Path") != "" {
		t.Errorf("direct call reached the provider with an original path: %v", l.Headers)
	}
}
