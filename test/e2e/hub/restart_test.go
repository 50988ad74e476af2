package hub

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRestartKeepsEverything restarts the hub on the same data dir with
// embedded etcd, as make run would.
func TestRestartKeepsEverything(t *testing.T) {
	t.Parallel()
	h := startHub(t, hubOptions{})
	if out := h.mustKubectl("", "get", "namespaces", "-o", "name"); out != "namespace/default\nnamespace/kube-system" {
		t.Fatalf("root namespaces on first start = %q", out)
	}
	id := h.createWorkspace("root", "persist")
	h.mustKubectl("root:persist", "create", "configmap", "kept", "--from-literal=k=v")
	h.mustApply("root", widgetCRD, "apply")
	h.mustKubectl("root", "wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=60s")
	h.mustApply("root:persist", widget("w", 7), "apply")
	token := h.Token
	ca, err := os.ReadFile(filepath.Join(h.opts.dataDir, "pki", "serving.crt"))
	if err != nil {
		t.Fatal(err)
	}

	h.restart()

	if h.Token != token {
		t.Error("admin token changed across restart")
	}
	ca2, _ := os.ReadFile(filepath.Join(h.opts.dataDir, "pki", "serving.crt"))
	if string(ca) != string(ca2) {
		t.Error("serving certificate changed across restart")
	}
	if got := h.mustKubectl("root", "get", "workspace", "persist", "-o", "jsonpath={.status.cluster}"); got != id {
		t.Errorf("cluster id after restart = %q, want %q", got, id)
	}
	if got := h.mustKubectl("root:persist", "get", "configmap", "kept", "-o", "jsonpath={.data.k}"); got != "v" {
		t.Errorf("configmap after restart = %q", got)
	}
	eventually(t, 60*time.Second, func() error {
		out, err := h.kubectl("root:persist", "get", "widget", "w", "-o", "jsonpath={.spec.size}")
		if err != nil || out != "7" {
			return fmt.Errorf("widget after restart: %v %q", err, out)
		}
		return nil
	})
	// The kubeconfig written on first start still works unchanged.
	if out := h.mustKubectl("", "get", "namespaces", "-o", "name"); !strings.Contains(out, "namespace/default") {
		cfg, _ := os.ReadFile(h.Kubecfg)
		t.Errorf("root namespaces = %q; via URL: %q; kubeconfig:\n%s", out, h.mustKubectl("root", "get", "namespaces", "-o", "name"), cfg)
	}
}

// TestTwoHubsShareExternalEtcd runs two hub processes on one external etcd:
// a workspace created through one is served by the other at once.
func TestTwoHubsShareExternalEtcd(t *testing.T) {
	t.Parallel()
	_, endpoints := externalEtcd(t)
	h1 := startHub(t, hubOptions{etcdServers: endpoints})
	h2 := startHub(t, hubOptions{etcdServers: endpoints})
	for i := 0; i < 5; i++ {
		name := fmt.Sprintf("shared-%d", i)
		id := h1.createWorkspace("root", name)
		h1.mustKubectl("root:"+name, "create", "configmap", "hello", "--from-literal=from=h1")
		// No waiting: the second replica falls back to etcd on a miss.
		if got := h2.mustKubectl("root:"+name, "get", "configmap", "hello", "-o", "jsonpath={.data.from}"); got != "h1" {
			t.Errorf("h2 read %q", got)
		}
		if got := h2.mustKubectl(id, "get", "namespaces", "-o", "name"); got != "namespace/default\nnamespace/kube-system" {
			t.Errorf("h2 by id: %q", got)
		}
	}
	// Both agree on root's id.
	r1 := h1.mustKubectl("root", "get", "workspace", "shared-0", "-o", `jsonpath={.metadata.annotations.wharf\.dev/cluster}`)
	r2 := h2.mustKubectl("root", "get", "workspace", "shared-0", "-o", `jsonpath={.metadata.annotations.wharf\.dev/cluster}`)
	if r1 == "" || r1 != r2 {
		t.Errorf("root cluster differs between replicas: %q vs %q", r1, r2)
	}
	// A deletion through h2 is honoured by h1.
	h2.mustKubectl("root", "delete", "workspace", "shared-1", "--timeout=60s")
	eventually(t, 30*time.Second, func() error {
		if out, err := h1.kubectl("root:shared-1", "get", "configmaps"); err == nil {
			return fmt.Errorf("h1 still serves deleted workspace: %s", out)
		}
		return nil
	})
}
