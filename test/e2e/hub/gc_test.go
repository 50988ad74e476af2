package hub

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func dependentSecret(name, ownerName, ownerUID string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: %s
  namespace: default
  ownerReferences:
  - {apiVersion: v1, kind: ConfigMap, name: %s, uid: %s, blockOwnerDeletion: true}
stringData: {k: v}
`, name, ownerName, ownerUID)
}

// TestGarbageCollection deletes owners with each propagation policy and
// checks their dependents, in two workspaces with the same names.
func TestGarbageCollection(t *testing.T) {
	t.Parallel()
	h := startHub(t, hubOptions{})
	h.createWorkspace("root", "gc-a")
	h.createWorkspace("root", "gc-b")
	for _, ws := range []string{"root:gc-a", "root:gc-b"} {
		for _, mode := range []string{"background", "foreground", "orphan"} {
			h.mustKubectl(ws, "create", "configmap", "owner-"+mode)
			uid := h.mustKubectl(ws, "get", "configmap", "owner-"+mode, "-o", "jsonpath={.metadata.uid}")
			h.mustApply(ws, dependentSecret("dep-"+mode, "owner-"+mode, uid), "create")
		}
	}
	ws := "root:gc-a"
	for _, mode := range []string{"background", "foreground", "orphan"} {
		h.mustKubectl(ws, "delete", "configmap", "owner-"+mode, "--cascade="+mode, "--timeout=60s")
	}
	eventually(t, 60*time.Second, func() error {
		for _, mode := range []string{"background", "foreground"} {
			if out, err := h.kubectl(ws, "get", "secret", "dep-"+mode); err == nil {
				return fmt.Errorf("%s dependent still there: %s", mode, out)
			}
		}
		return nil
	})
	if out := h.mustKubectl(ws, "get", "secret", "dep-orphan", "-o", "jsonpath={.metadata.ownerReferences}"); out != "" {
		t.Errorf("orphaned dependent keeps owner references: %s", out)
	}
	// The other workspace's identically named owners and dependents are
	// untouched.
	out := h.mustKubectl("root:gc-b", "get", "secrets", "-o", "name")
	for _, mode := range []string{"background", "foreground", "orphan"} {
		if !strings.Contains(out, "secret/dep-"+mode) {
			t.Errorf("root:gc-b lost dep-%s: %q", mode, out)
		}
	}
	// A dependent whose owner lives in another workspace has no owner here
	// and is collected; a dependent of a live owner stays.
	otherUID := h.mustKubectl("root:gc-b", "get", "configmap", "owner-background", "-o", "jsonpath={.metadata.uid}")
	h.mustApply(ws, dependentSecret("cross", "owner-background", otherUID), "create")
	h.mustKubectl(ws, "create", "configmap", "alive")
	aliveUID := h.mustKubectl(ws, "get", "configmap", "alive", "-o", "jsonpath={.metadata.uid}")
	h.mustApply(ws, dependentSecret("kept", "alive", aliveUID), "create")
	eventually(t, 60*time.Second, func() error {
		if out, err := h.kubectl(ws, "get", "secret", "cross"); err == nil {
			return fmt.Errorf("cross-workspace dependent kept alive: %s", out)
		}
		return nil
	})
	if _, err := h.kubectl(ws, "get", "secret", "kept"); err != nil {
		t.Error("dependent of a live owner was collected")
	}
}
