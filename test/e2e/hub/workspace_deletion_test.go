package hub

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Workspace deletion as kcp and namespace deletion do it (issue 12 items
// 10 and 13): a Workspace is Ready once initialized (`kubectl wait
// --for=condition=Ready`), and its deletion deletes child workspaces and
// content through the API, so finalizers and the controllers holding them
// see it, and purges what remains only after
// --workspace-deletion-grace-period, reporting it. The kube side of the
// fidelity table has no Workspaces (nor a namespace controller), so this
// runs against the hub alone and asserts what kube's namespace deletion
// documents: objects get a deletionTimestamp and stay until their
// finalizers are removed, creates are refused while terminating, and the
// condition lists what remains.

var holdCRD = openCRD("wsdel.example.com", "holds", "Hold")

const (
	releaseFinalizer = "wsdel.example.com/release" // the test's "controller" removes it
	keepFinalizer    = "wsdel.example.com/keep"    // nobody removes it: the grace period ends it
)

func TestWorkspaceDeletionHonoursFinalizers(t *testing.T) {
	t.Parallel()
	const grace = 40 * time.Second
	h := startHub(t, hubOptions{extraArgs: []string{fmt.Sprintf("--workspace-deletion-grace-period=%s", grace)}})
	h.mustApply("root", holdCRD, "apply")
	h.mustKubectl("root", "wait", "--for=condition=Established", "crd/holds.wsdel.example.com", "--timeout=60s")

	// Item 10: Ready on creation, as kubectl wait expects of kcp.
	h.mustApply("root", "apiVersion: tenancy.wharf.dev/v1alpha1\nkind: Workspace\nmetadata:\n  name: del\n", "create")
	h.mustKubectl("root", "wait", "--for=condition=Ready", "workspace/del", "--timeout=60s")
	if got := h.mustKubectl("root", "get", "workspace", "del", "-o", "jsonpath={.status.phase}"); got != "Ready" {
		t.Fatalf("phase after creation = %q, want Ready", got)
	}
	h.mustApply("root:del", "apiVersion: tenancy.wharf.dev/v1alpha1\nkind: Workspace\nmetadata:\n  name: inner\n", "create")
	h.mustKubectl("root:del", "wait", "--for=condition=Ready", "workspace/inner", "--timeout=60s")

	h.mustKubectl("root:del", "create", "namespace", "team")
	h.mustApply("root:del", fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: released, namespace: team, finalizers: [%q]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: plain, namespace: team}
---
apiVersion: wsdel.example.com/v1
kind: Hold
metadata: {name: kept, namespace: default, finalizers: [%q]}
`, releaseFinalizer, keepFinalizer), "create")
	h.mustApply("root:del:inner", fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: inner-released, namespace: default, finalizers: [%q]}\n", releaseFinalizer), "create")

	h.mustKubectl("root", "delete", "workspace", "del", "--wait=false")
	deleted := time.Now()
	waitDone := make(chan error, 1)
	var waitOut string
	go func() {
		var err error
		waitOut, err = h.kubectlCtx(context.Background(), "root", "wait", "--for=delete", "workspace/del", "--timeout=110s")
		waitDone <- err
	}()

	// The finalizers see the deletion; plain content goes at once.
	deletionSeen := func(ws, kind, ns, name string) func() error {
		return func() error {
			out, err := h.kubectl(ws, "get", kind, name, "-n", ns, "-o", "jsonpath={.metadata.deletionTimestamp}")
			if err != nil || out == "" {
				return fmt.Errorf("%s %s/%s in %s: deletionTimestamp %q, %v", kind, ns, name, ws, out, err)
			}
			return nil
		}
	}
	eventually(t, 60*time.Second, deletionSeen("root:del", "configmap", "team", "released"))
	eventually(t, 60*time.Second, deletionSeen("root:del", "hold", "default", "kept"))
	eventually(t, 60*time.Second, deletionSeen("root:del:inner", "configmap", "default", "inner-released"))
	eventually(t, 60*time.Second, func() error {
		if out, err := h.kubectl("root:del", "get", "configmap", "plain", "-n", "team"); err == nil {
			return fmt.Errorf("plain ConfigMap still there: %s", out)
		}
		return nil
	})
	// The namespace waits for its content, so it is not yet being deleted.
	if out := h.mustKubectl("root:del", "get", "namespace", "team", "-o", "jsonpath={.status.phase}"); out != "Active" {
		t.Errorf("namespace team phase %q while its content remains, want Active", out)
	}
	// As in a terminating namespace, nothing new may be created.
	if out, err := h.kubectl("root:del", "create", "configmap", "late", "-n", "default"); err == nil || !strings.Contains(out, "being deleted") {
		t.Errorf("create in a terminating workspace: %v %s", err, out)
	}
	eventually(t, 60*time.Second, func() error {
		out, err := h.kubectl("root", "get", "workspace", "del", "-o",
			`jsonpath={.status.phase}|{.status.conditions[?(@.type=="Ready")].status}|{.status.conditions[?(@.type=="ContentDeleted")].reason}|{.status.conditions[?(@.type=="ContentDeleted")].message}`)
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		if !strings.HasPrefix(out, "Terminating|False|SomeFinalizersRemain|") || !strings.Contains(out, keepFinalizer+" in 1 resource instances") {
			return fmt.Errorf("terminating workspace status %q", out)
		}
		return nil
	})

	// The test's controller releases its objects; they go, and so does
	// the child workspace, while the kept one still holds the parent.
	h.mustKubectl("root:del", "patch", "configmap", "released", "-n", "team", "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
	h.mustKubectl("root:del:inner", "patch", "configmap", "inner-released", "-n", "default", "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
	eventually(t, 60*time.Second, func() error {
		if out, err := h.kubectl("root:del", "get", "configmap", "released", "-n", "team"); err == nil {
			return fmt.Errorf("released ConfigMap still there: %s", out)
		}
		if out, err := h.kubectl("root:del", "get", "workspace", "inner"); err == nil {
			return fmt.Errorf("child workspace still there: %s", out)
		}
		return nil
	})
	out, err := h.kubectl("root:del", "get", "hold", "kept", "-n", "default", "-o", "name")
	if early := time.Since(deleted) < grace; early && (err != nil || out != "hold.wsdel.example.com/kept") {
		t.Fatalf("kept object gone before the grace period: %v %s", err, out)
	}

	// The grace period ends the wait: the rest is purged and reported.
	select {
	case err := <-waitDone:
		if err != nil {
			t.Fatalf("kubectl wait --for=delete: %v: %s", err, waitOut)
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("kubectl wait --for=delete did not return")
	}
	if since := time.Since(deleted); since < grace {
		t.Errorf("workspace purged after %s, before its grace period of %s", since, grace)
	}
	if code, body := h.doAs(h.Token, http.MethodGet, "/clusters/root:del/api/v1/namespaces", ""); code != http.StatusNotFound {
		t.Errorf("deleted workspace answers %d: %s", code, body)
	}
	// Hub-wide definitions answer in every workspace but are no
	// workspace's content.
	if out, err := h.kubectl("root", "get", "crd", "holds.wsdel.example.com", "-o", "name"); err != nil {
		t.Errorf("workspace deletion deleted the hub-wide CRD: %v %s", err, out)
	}
	code, metrics := h.doAs(h.Token, http.MethodGet, "/metrics", "")
	if want := `wharf_workspace_deletion_forced_objects_total{resource="holds.wsdel.example.com"} 1`; code != http.StatusOK || !strings.Contains(metrics, want) {
		t.Errorf("/metrics (%d) lacks %s", code, want)
	}
	if log := h.log.String(); !strings.Contains(log, "Workspace deletion grace period ended") || !strings.Contains(log, "holds.wsdel.example.com has 1 resource instances") {
		t.Errorf("no log line reports the forced content")
	}
}
