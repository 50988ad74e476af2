package hub

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestNestedWorkspaces creates root:l1:l2:l3 and addresses the deepest one
// by path and by id.
func TestNestedWorkspaces(t *testing.T) {
	t.Parallel()
	h := startHub(t, hubOptions{})
	h.createWorkspace("root", "l1")
	h.createWorkspace("root:l1", "l2")
	id := h.createWorkspace("root:l1:l2", "l3")
	if len(id) != 16 {
		t.Fatalf("cluster id %q is not 16 characters", id)
	}
	row := h.mustKubectl("root:l1:l2", "get", "workspaces", "--no-headers")
	for _, want := range []string{"l3", "Ready", id, h.URL + "/clusters/root:l1:l2:l3"} {
		if !strings.Contains(row, want) {
			t.Errorf("kubectl get workspaces row %q lacks %q", row, want)
		}
	}
	h.mustKubectl("root:l1:l2:l3", "create", "configmap", "deep", "--from-literal=k=v")
	if got := h.mustKubectl(id, "get", "configmap", "deep", "-o", "jsonpath={.data.k}"); got != "v" {
		t.Errorf("by id: %q", got)
	}
	if got := h.mustKubectl(id, "get", "namespaces", "-o", "name"); got != "namespace/default\nnamespace/kube-system" {
		t.Errorf("new workspace namespaces = %q", got)
	}
	// Children are not visible from the grandparent.
	if out := h.mustKubectl("root:l1", "get", "workspaces", "-o", "name"); out != "workspace.tenancy.wharf.dev/l2" {
		t.Errorf("root:l1 workspaces = %q", out)
	}
	// Names are DNS labels; duplicates conflict.
	if out, err := h.applyStdin("root", "apiVersion: tenancy.wharf.dev/v1alpha1\nkind: Workspace\nmetadata:\n  name: Bad_Name\n", "create"); err == nil {
		t.Errorf("invalid name accepted: %s", out)
	}
	if out, err := h.applyStdin("root", "apiVersion: tenancy.wharf.dev/v1alpha1\nkind: Workspace\nmetadata:\n  name: l1\n", "create"); err == nil || !strings.Contains(out, "AlreadyExists") {
		t.Errorf("duplicate workspace: err=%v %s", err, out)
	}
}

// TestWorkspaceDeletionCascade deletes a workspace with a child and checks
// by scanning etcd that no key of either logical cluster is left.
func TestWorkspaceDeletionCascade(t *testing.T) {
	t.Parallel()
	etcd, endpoints := externalEtcd(t)
	h := startHub(t, hubOptions{etcdServers: endpoints})
	parent := h.createWorkspace("root", "doomed")
	child := h.createWorkspace("root:doomed", "child")
	keep := h.createWorkspace("root", "keep")
	for _, ws := range []string{"root:doomed", "root:doomed:child", "root:keep"} {
		h.mustKubectl(ws, "create", "configmap", "c", "--from-literal=a=b")
		h.mustKubectl(ws, "create", "secret", "generic", "s", "--from-literal=a=b")
		h.mustKubectl(ws, "create", "namespace", "extra")
		h.mustKubectl(ws, "create", "serviceaccount", "sa", "-n", "extra")
		h.mustKubectl(ws, "create", "role", "r", "--verb=get", "--resource=configmaps")
	}
	if n := len(keysContaining(t, etcd, parent, child)); n < 10 {
		t.Fatalf("expected the doomed workspaces to have keys, found %d", n)
	}

	h.mustKubectl("root", "delete", "workspace", "doomed", "--timeout=60s")
	eventually(t, 60*time.Second, func() error {
		if left := keysContaining(t, etcd, parent, child); len(left) > 0 {
			return fmt.Errorf("orphaned keys: %v", left)
		}
		return nil
	})
	if out, err := h.kubectl("root", "get", "workspace", "doomed"); err == nil {
		t.Errorf("workspace still present: %s", out)
	}
	for _, ws := range []string{"root:doomed", "root:doomed:child", parent} {
		if code, body, _ := h.get("/clusters/" + ws + "/api/v1/namespaces"); code != http.StatusNotFound {
			t.Errorf("%s after deletion: %d %s", ws, code, body)
		}
	}
	// The sibling is untouched, and the name can be reused with a new id.
	if got := h.mustKubectl("root:keep", "get", "configmap", "c", "-o", "jsonpath={.data.a}"); got != "b" {
		t.Errorf("sibling lost data: %q", got)
	}
	if len(keysContaining(t, etcd, keep)) == 0 {
		t.Error("sibling keys gone")
	}
	if again := h.createWorkspace("root", "doomed"); again == parent {
		t.Errorf("recreated workspace reused cluster id %s", again)
	}
	if out := h.mustKubectl("root:doomed", "get", "configmaps", "-o", "name"); out != "" {
		t.Errorf("recreated workspace sees old data: %q", out)
	}
}

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
`

func widget(name string, size int) string {
	return fmt.Sprintf("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: %s\n  namespace: default\nspec:\n  size: %d\n", name, size)
}

// TestCRDLifecycle serves one CRD in two workspaces with separate instances,
// then deletes it and checks every instance is gone from etcd.
func TestCRDLifecycle(t *testing.T) {
	t.Parallel()
	etcd, endpoints := externalEtcd(t)
	h := startHub(t, hubOptions{etcdServers: endpoints})
	h.createWorkspace("root", "ca")
	h.createWorkspace("root", "cb")
	h.mustApply("root", widgetCRD, "apply")
	h.mustKubectl("root", "wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=60s")

	h.mustApply("root:ca", widget("w", 1), "apply")
	h.mustApply("root:cb", widget("w", 2), "apply", "--server-side")
	h.mustKubectl("root:cb", "patch", "widget", "w", "--type=merge", "-p", `{"spec":{"size":3}}`)
	for ws, want := range map[string]string{"root:ca": "1", "root:cb": "3"} {
		if got := h.mustKubectl(ws, "get", "widget", "w", "-o", "jsonpath={.spec.size}"); got != want {
			t.Errorf("%s widget size = %q, want %q", ws, got, want)
		}
	}
	// The definition is hub-wide: both workspaces list it.
	if out := h.mustKubectl("root:ca", "get", "crd", "-o", "name"); !strings.Contains(out, "widgets.example.com") {
		t.Errorf("CRD not visible in root:ca: %q", out)
	}
	if keys := keysWithPrefix(t, etcd, "/registry/example.com/widgets/"); len(keys) != 2 {
		t.Fatalf("widget keys = %v", keys)
	}
	// Unaggregated discovery (older clients) lists the CRD's group too.
	eventually(t, 30*time.Second, func() error {
		if _, body, _ := h.get("/apis"); !strings.Contains(body, `"name":"example.com"`) {
			return fmt.Errorf("legacy /apis lacks example.com: %s", body)
		}
		return nil
	})

	h.mustKubectl("root", "delete", "crd", "widgets.example.com", "--timeout=60s")
	eventually(t, 60*time.Second, func() error {
		if keys := keysWithPrefix(t, etcd, "/registry/example.com/widgets/"); len(keys) > 0 {
			return fmt.Errorf("instances left: %v", keys)
		}
		if out, err := h.kubectl("root", "get", "crd", "widgets.example.com"); err == nil {
			return fmt.Errorf("CRD still there: %s", out)
		}
		if _, body, _ := h.get("/apis"); strings.Contains(body, `"name":"example.com"`) {
			return fmt.Errorf("legacy /apis still lists example.com")
		}
		return nil
	})
}

// TestOrphanedAllocationIsCollected simulates a hub that died between
// allocating a workspace path and storing its Workspace: the next hub
// releases the path and the logical cluster's keys.
func TestOrphanedAllocationIsCollected(t *testing.T) {
	t.Parallel()
	etcd, endpoints := externalEtcd(t)
	const ghost = "ghostghostghost1"
	ctx := context.Background()
	for k, v := range map[string]string{
		"/registry/wharf.dev/workspacepaths/root:ghost":     ghost,
		"/registry/wharf.dev/logicalclusters/" + ghost:      `{"path":"root:ghost","allocated":"2020-01-01T00:00:00Z"}`,
		"/registry/core/configmaps/" + ghost + "/default/x": `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x","namespace":"default","annotations":{"wharf.dev/cluster":"` + ghost + `"}}}`,
	} {
		if _, err := etcd.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	h := startHub(t, hubOptions{etcdServers: endpoints})
	eventually(t, 90*time.Second, func() error {
		if left := keysContaining(t, etcd, ghost, "root:ghost"); len(left) > 0 {
			return fmt.Errorf("orphan keys left: %v", left)
		}
		return nil
	})
	if id := h.createWorkspace("root", "ghost"); id == ghost {
		t.Errorf("recreated workspace reused the orphan's id")
	}
}
