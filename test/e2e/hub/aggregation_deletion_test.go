package hub

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAggregationWorkspaceDeletion: a workspace holding a protected
// APIService (which no user may delete) and an aggregated group in its
// discovery is still deleted completely: the hub's own content deletion
// may remove the APIService, and routing ends with the workspace.
func TestAggregationWorkspaceDeletion(t *testing.T) {
	t.Parallel()
	h := aggHub(t, hubOptions{}, "resource-proxy")
	h.createWorkspace("root", "c")
	h.enableProvider("root:c", "resource-proxy")
	h.registerProbe("root:c", "resource-proxy", true)
	eventually(t, 90*time.Second, func() error {
		if st, reason, err := h.apiServiceCondition("root:c"); err != nil || st != "True" || reason != "Passed" {
			return fmt.Errorf("available %q %q %v", st, reason, err)
		}
		return nil
	})
	if out, err := h.kubectl("root:c", "delete", "apiservice", "v1.probe.example.com"); err == nil ||
		!strings.Contains(out, "is managed by a ResourceProxy; delete the ResourceProxy instead") {
		t.Fatalf("admin deleted the protected APIService: %v %s", err, out)
	}
	h.mustKubectl("root", "delete", "workspace", "c", "--timeout=120s")
	eventually(t, 120*time.Second, func() error {
		if out, err := h.kubectl("root", "get", "workspace", "c"); err == nil {
			return fmt.Errorf("workspace still present: %s", out)
		}
		return nil
	})
	if code, body, _ := h.get("/clusters/root:c/apis/probe.example.com/v1/probes"); code != http.StatusNotFound {
		t.Errorf("after deletion: %d %s", code, body)
	}
}
