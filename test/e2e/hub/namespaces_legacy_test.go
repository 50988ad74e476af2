package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestNamespaceLegacyFinalizer: a namespace stored by an earlier hub, held
// by the metadata finalizer wharf.dev/namespace-content and without
// spec.finalizers, is still deleted with its content, and a plain update
// dropping that finalizer does not skip the content deletion (issue 12.3).
func TestNamespaceLegacyFinalizer(t *testing.T) {
	t.Parallel()
	etcd, endpoints := externalEtcd(t)
	h := startHub(t, hubOptions{etcdServers: endpoints})
	id := h.createWorkspace("root", "nsleg")
	ws := "root:nsleg"
	h.mustKubectl(ws, "create", "namespace", "legacy")
	h.mustKubectl(ws, "create", "configmap", "c", "-n", "legacy")

	// Rewrite the stored namespace as an earlier hub wrote it.
	var key string
	for _, k := range keysContaining(t, etcd, "/"+id+"/legacy") {
		if strings.HasSuffix(k, "/namespaces/"+id+"/legacy") {
			key = k
		}
	}
	if key == "" {
		t.Fatalf("no namespace key in etcd")
	}
	resp, err := etcd.Get(context.Background(), key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("get %s: %v", key, err)
	}
	var ns map[string]interface{}
	if err := json.Unmarshal(resp.Kvs[0].Value, &ns); err != nil {
		t.Fatalf("stored namespace is not JSON: %v", err)
	}
	ns["metadata"].(map[string]interface{})["finalizers"] = []string{"wharf.dev/namespace-content"}
	delete(ns, "spec")
	b, _ := json.Marshal(ns)
	if _, err := etcd.Put(context.Background(), key, string(b)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		got, err := h.kubectl(ws, "get", "namespace", "legacy", "-o", "jsonpath={.metadata.finalizers} {.spec.finalizers}")
		if err != nil || got != `["wharf.dev/namespace-content"]` {
			return fmt.Errorf("legacy namespace not served yet: %q %v", got, err)
		}
		return nil
	})

	h.mustKubectl(ws, "delete", "namespace", "legacy", "--wait=false")
	// A client drops the old finalizer: the hold moves to spec.finalizers
	// (or the controller has finished already).
	if out, err := h.kubectl(ws, "patch", "namespace", "legacy", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`); err != nil && !strings.Contains(out, "not found") {
		t.Fatalf("patch: %v %s", err, out)
	}
	eventually(t, 60*time.Second, func() error {
		if left := keysContaining(t, etcd, "/"+id+"/legacy/"); len(left) > 0 {
			return fmt.Errorf("left in deleted namespace: %v", left)
		}
		if out, err := h.kubectl(ws, "get", "namespace", "legacy"); err == nil {
			return fmt.Errorf("namespace still there: %s", out)
		}
		return nil
	})
}
