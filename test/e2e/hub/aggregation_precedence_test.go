package hub

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAggregationPrecedence: with a hub-wide CRD of the same group and
// version, root:a's APIService wins in a (requests and discovery go to
// the provider), while root:b keeps serving the CRD's objects. The
// APIService kind itself has its OpenAPI document.
func TestAggregationPrecedence(t *testing.T) {
	t.Parallel()
	h := aggHub(t, hubOptions{}, "aggprobe")
	h.createWorkspace("root", "a")
	h.createWorkspace("root", "b")
	h.mustApply("", openCRD("probe.example.com", "probes", "Probe"), "apply")
	probe := "apiVersion: probe.example.com/v1\nkind: Probe\nmetadata:\n  name: crd-one\n  namespace: default\n"
	eventually(t, 60*time.Second, func() error {
		out, err := h.applyStdin("root:b", probe, "apply")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	h.enableProvider("root:a", "aggprobe")
	h.registerProbe("root:a", "aggprobe", false)
	eventually(t, 90*time.Second, func() error {
		code, body, _ := h.get("/clusters/root:a/apis/probe.example.com/v1/probes")
		if code != http.StatusOK || !strings.Contains(body, `"echo"`) || !strings.Contains(body, "ProbeList") {
			return fmt.Errorf("a: %d %s", code, body)
		}
		return nil
	})
	// b is unaffected: the CRD's object, not the provider's.
	if out := h.mustKubectl("root:b", "--cache-dir", t.TempDir(), "get", "probes", "-A"); !strings.Contains(out, "crd-one") || strings.Contains(out, "echo") {
		t.Errorf("b: %s", out)
	}
	if code, body, _ := h.get("/clusters/root:b/apis/probe.example.com/v1/namespaces/default/probes/crd-one"); code != http.StatusOK {
		t.Errorf("b crd-one: %d %s", code, body)
	}
	// a's discovery is the provider's (cluster-scoped probes, get/list).
	eventually(t, 60*time.Second, func() error {
		code, body, _ := h.get("/clusters/root:a/apis/probe.example.com/v1")
		if code != http.StatusOK || strings.Contains(body, `"namespaced":true`) || !strings.Contains(body, `"verbs":["get","list"]`) {
			return fmt.Errorf("a discovery: %d %s", code, body)
		}
		return nil
	})
	if code, body, _ := h.get("/clusters/root:b/apis/probe.example.com/v1"); code != http.StatusOK || !strings.Contains(body, `"namespaced":true`) {
		t.Errorf("b discovery: %d %s", code, body)
	}
	if out := h.mustKubectl("root:a", "--cache-dir", t.TempDir(), "api-resources", "--api-group", "probe.example.com", "--namespaced=false"); !strings.Contains(out, "probes") {
		t.Errorf("a api-resources: %s", out)
	}
	if code, body, _ := h.get("/clusters/root:a/openapi/v3/apis/apiregistration.k8s.io/v1"); code != http.StatusOK || !strings.Contains(body, "APIServiceSpec") {
		t.Errorf("APIService OpenAPI: %d %.300s", code, body)
	}
	if out := h.mustKubectl("root:a", "explain", "apiservice.spec.service"); !strings.Contains(out, "namespace") {
		t.Errorf("kubectl explain: %s", out)
	}
}
