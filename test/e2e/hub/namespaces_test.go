package hub

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestNamespaceLifecycle: objects need an existing namespace, namespace
// deletion removes its content (checked in etcd), and every workspace has
// default and kube-system, which cannot be deleted.
func TestNamespaceLifecycle(t *testing.T) {
	t.Parallel()
	etcd, endpoints := externalEtcd(t)
	h := startHub(t, hubOptions{etcdServers: endpoints})
	id := h.createWorkspace("root", "nsl")
	ws := "root:nsl"
	if got := h.mustKubectl(ws, "get", "namespaces", "-o", "name"); got != "namespace/default\nnamespace/kube-system" {
		t.Errorf("new workspace namespaces = %q", got)
	}
	h.mustApply("root", widgetCRD, "apply")
	h.mustKubectl("root", "wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=60s")

	for _, args := range [][]string{
		{"create", "configmap", "c", "-n", "missing"},
		{"create", "secret", "generic", "s", "-n", "missing", "--from-literal=a=b"},
	} {
		// As kube-apiserver: the namespace's own 404.
		if out, err := h.kubectl(ws, args...); err == nil || !strings.Contains(out, `namespaces "missing" not found`) {
			t.Errorf("kubectl %v: err=%v out=%q", args, err, out)
		}
	}
	missingWidget := strings.Replace(widget("w", 1), "namespace: default", "namespace: missing", 1)
	if out, err := h.applyStdin(ws, missingWidget, "create"); err == nil || !strings.Contains(out, `namespaces "missing" not found`) {
		t.Errorf("custom resource in missing namespace: err=%v out=%q", err, out)
	}

	h.mustKubectl(ws, "create", "namespace", "doomed")
	// Upstream's model: the name label, and spec.finalizers holds deletion.
	if got := h.mustKubectl(ws, "get", "namespace", "doomed", "-o", `jsonpath={.spec.finalizers} {.metadata.labels.kubernetes\.io/metadata\.name} {.metadata.finalizers}`); got != `["kubernetes"] doomed` {
		t.Errorf("new namespace: %q", got)
	}
	h.mustKubectl(ws, "create", "configmap", "c", "-n", "doomed")
	h.mustKubectl(ws, "create", "secret", "generic", "s", "-n", "doomed", "--from-literal=a=b")
	h.mustKubectl(ws, "create", "role", "r", "-n", "doomed", "--verb=get", "--resource=configmaps")
	h.mustApply(ws, strings.Replace(widget("w", 1), "namespace: default", "namespace: doomed", 1), "create")
	h.mustKubectl(ws, "create", "configmap", "survivor", "-n", "default")
	inNS := func() []string {
		var out []string
		for _, k := range keysContaining(t, etcd, "/"+id+"/doomed/") {
			out = append(out, k)
		}
		return out
	}
	if n := len(inNS()); n != 4 {
		t.Fatalf("expected 4 keys in namespace doomed, found %v", inNS())
	}
	h.mustKubectl(ws, "delete", "namespace", "doomed", "--timeout=60s")
	eventually(t, 60*time.Second, func() error {
		if left := inNS(); len(left) > 0 {
			return fmt.Errorf("left in deleted namespace: %v", left)
		}
		if out, err := h.kubectl(ws, "get", "namespace", "doomed"); err == nil {
			return fmt.Errorf("namespace still there: %s", out)
		}
		return nil
	})
	if got := h.mustKubectl(ws, "get", "configmap", "survivor", "-n", "default", "-o", "name"); got != "configmap/survivor" {
		t.Errorf("other namespace lost content: %q", got)
	}
	for _, ns := range []string{"default", "kube-system"} {
		if out, err := h.kubectl(ws, "delete", "namespace", ns); err == nil || !strings.Contains(out, "cannot be deleted") {
			t.Errorf("delete %s: err=%v out=%q", ns, err, out)
		}
	}
	// The namespace name can be used again, empty.
	h.mustKubectl(ws, "create", "namespace", "doomed")
	if out := h.mustKubectl(ws, "get", "configmaps", "-n", "doomed", "-o", "name"); out != "" {
		t.Errorf("recreated namespace has content: %q", out)
	}
}
