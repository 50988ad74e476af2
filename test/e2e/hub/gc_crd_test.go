package hub

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The kube fixture of the fidelity table runs no controller-manager, so
// its garbage collector cannot be compared: these tests assert upstream's
// documented behaviour against the hub alone.

func gcCRD(plural, kind string) string { return openCRD("gc.example.com", plural, kind) }

// ownedBy renders an object in namespace default whose single owner
// reference is given; apiVersion/kind select a Gadget, Sprocket or
// ConfigMap.
func ownedBy(kind, name, ownerAPIVersion, ownerKind, ownerName, ownerUID string, extra string) string {
	api := "gc.example.com/v1"
	if kind == "ConfigMap" {
		api = "v1"
	}
	return fmt.Sprintf(`apiVersion: %s
kind: %s
metadata:
  name: %s
  namespace: default
  ownerReferences:
  - {apiVersion: %s, kind: %s, name: %s, uid: %s, blockOwnerDeletion: true}
%s`, api, kind, name, ownerAPIVersion, ownerKind, ownerName, ownerUID, extra)
}

func gadget(name string) string {
	return fmt.Sprintf("apiVersion: gc.example.com/v1\nkind: Gadget\nmetadata:\n  name: %s\n  namespace: default\n", name)
}

func (h *hubProc) uidOf(ws, res, name string) string {
	h.t.Helper()
	return h.mustKubectl(ws, "get", res, name, "-o", "jsonpath={.metadata.uid}")
}

func (h *hubProc) gone(ws, res, name string) error {
	out, err := h.kubectl(ws, "get", res, name, "-o", "name")
	if err == nil {
		return fmt.Errorf("%s %s/%s still there: %s", ws, res, name, out)
	}
	if !strings.Contains(out, "NotFound") {
		return fmt.Errorf("%s get %s/%s: %s", ws, res, name, out)
	}
	return nil
}

// TestGarbageCollectionCustomResources: custom resources are owners and
// dependents like built-in objects, per workspace. The sections share one
// hub and run in order (not as subtests: the harness fails the test that
// started the hub).
func TestGarbageCollectionCustomResources(t *testing.T) {
	t.Parallel()
	h := startHub(t, hubOptions{})
	h.createWorkspace("root", "gcc")
	h.createWorkspace("root", "gcc-b")
	h.mustApply("root", gcCRD("gadgets", "Gadget"), "create")
	h.mustKubectl("root", "wait", "--for=condition=Established", "crd/gadgets.gc.example.com", "--timeout=60s")
	gcCRDModes(t, h, "root:gcc")
	gcCRDCrossWorkspace(t, h, "root:gcc", "root:gcc-b")
	gcCRDDeleted(t, h, "root:gcc")
	gcHubKinds(t, h, "root:gcc")
}

// gcCRDModes deletes custom resources and ConfigMaps with each propagation
// policy, with dependents of the other kind, and checks what upstream
// documents: background and foreground delete the dependents (foreground
// before the owner is gone, and in the foreground themselves), orphan
// strips the owner reference.
func gcCRDModes(t *testing.T, h *hubProc, ws string) {
	for _, mode := range []string{"background", "foreground", "orphan"} {
		// A Gadget owning a Gadget (which owns a ConfigMap) and a ConfigMap.
		h.mustApply(ws, gadget("owner-"+mode), "create")
		uid := h.uidOf(ws, "gadget", "owner-"+mode)
		h.mustApply(ws, ownedBy("Gadget", "child-"+mode, "gc.example.com/v1", "Gadget", "owner-"+mode, uid, ""), "create")
		h.mustApply(ws, ownedBy("ConfigMap", "cm-of-gadget-"+mode, "gc.example.com/v1", "Gadget", "owner-"+mode, uid, ""), "create")
		childUID := h.uidOf(ws, "gadget", "child-"+mode)
		h.mustApply(ws, ownedBy("ConfigMap", "grandchild-"+mode, "gc.example.com/v1", "Gadget", "child-"+mode, childUID, ""), "create")
		// A ConfigMap owning a Gadget.
		h.mustKubectl(ws, "create", "configmap", "cm-owner-"+mode)
		cmUID := h.uidOf(ws, "configmap", "cm-owner-"+mode)
		h.mustApply(ws, ownedBy("Gadget", "gadget-of-cm-"+mode, "v1", "ConfigMap", "cm-owner-"+mode, cmUID, ""), "create")
	}

	for _, mode := range []string{"background", "foreground", "orphan"} {
		// kubectl waits until the owner is gone: in the foreground, that
		// is after the collector dropped foregroundDeletion.
		h.mustKubectl(ws, "delete", "gadget", "owner-"+mode, "--cascade="+mode, "--timeout=90s")
		h.mustKubectl(ws, "delete", "configmap", "cm-owner-"+mode, "--cascade="+mode, "--timeout=90s")
	}
	// Foreground: the owner went only after its blocking dependents, and
	// theirs, were deleted.
	for _, o := range [][2]string{{"gadget", "child-foreground"}, {"configmap", "cm-of-gadget-foreground"},
		{"configmap", "grandchild-foreground"}, {"gadget", "gadget-of-cm-foreground"}} {
		if err := h.gone(ws, o[0], o[1]); err != nil {
			t.Errorf("foreground owner deleted before its dependent: %v", err)
		}
	}
	eventually(t, 90*time.Second, func() error {
		for _, o := range [][2]string{{"gadget", "child-background"}, {"configmap", "cm-of-gadget-background"},
			{"configmap", "grandchild-background"}, {"gadget", "gadget-of-cm-background"}} {
			if err := h.gone(ws, o[0], o[1]); err != nil {
				return err
			}
		}
		return nil
	})
	// Orphan: dependents stay, without the reference; the child's own
	// dependent still belongs to it.
	for _, o := range [][2]string{{"gadget", "child-orphan"}, {"configmap", "cm-of-gadget-orphan"}, {"gadget", "gadget-of-cm-orphan"}} {
		if out := h.mustKubectl(ws, "get", o[0], o[1], "-o", "jsonpath={.metadata.ownerReferences}"); out != "" {
			t.Errorf("orphaned %s/%s keeps owner references: %s", o[0], o[1], out)
		}
	}
	if out := h.mustKubectl(ws, "get", "configmap", "grandchild-orphan", "-o", "jsonpath={.metadata.ownerReferences[0].name}"); out != "child-orphan" {
		t.Errorf("grandchild of an orphaned child lost its owner: %q", out)
	}
}

// gcCRDCrossWorkspace: an owner reference resolves in its own workspace
// only, by uid. B's objects naming the uid of A's live Gadget have no owner
// in B and are collected (upstream: owner absent => delete dependent), even
// where B has a Gadget of that name (another uid); A's Gadget and its
// dependents are untouched, and a B object claiming to block A's owner
// does not hold A's foreground deletion. A reference to a kind nobody
// serves never causes a deletion.
func gcCRDCrossWorkspace(t *testing.T, h *hubProc, a, b string) {
	h.mustApply(a, gadget("victim"), "create")
	victimUID := h.uidOf(a, "gadget", "victim")
	h.mustApply(a, ownedBy("ConfigMap", "victim-dep", "gc.example.com/v1", "Gadget", "victim", victimUID, ""), "create")
	h.mustApply(b, gadget("victim"), "create")
	for _, kind := range []string{"Gadget", "ConfigMap"} {
		h.mustApply(b, ownedBy(kind, "cross-"+strings.ToLower(kind), "gc.example.com/v1", "Gadget", "victim", victimUID, ""), "create")
	}
	// Held by a finalizer, so that it stays (Terminating) as A's
	// would-be blocking dependent.
	h.mustApply(b, ownedBy("ConfigMap", "holder", "gc.example.com/v1", "Gadget", "victim", victimUID,
		"  finalizers: [example.com/hold]\n"), "create")
	h.mustApply(a, ownedBy("ConfigMap", "unknown-owner", "nowhere.example.com/v1", "Ghost", "g", "00000000-0000-0000-0000-000000000001", ""), "create")

	eventually(t, 90*time.Second, func() error {
		for _, n := range []string{"cross-gadget", "cross-configmap"} {
			res := "gadget"
			if strings.HasSuffix(n, "configmap") {
				res = "configmap"
			}
			if err := h.gone(b, res, n); err != nil {
				return err
			}
		}
		ts := h.mustKubectl(b, "get", "configmap", "holder", "-o", "jsonpath={.metadata.deletionTimestamp}")
		if ts == "" {
			return fmt.Errorf("%s configmap/holder not collected", b)
		}
		return nil
	})
	// A's owner and dependent are untouched, and so is B's own Gadget.
	if got := h.uidOf(a, "gadget", "victim"); got != victimUID {
		t.Errorf("A's gadget changed: uid %s, want %s", got, victimUID)
	}
	h.mustKubectl(a, "get", "configmap", "victim-dep")
	h.mustKubectl(b, "get", "gadget", "victim")
	// A's foreground deletion finishes: B's holder is not A's dependent.
	h.mustKubectl(a, "delete", "gadget", "victim", "--cascade=foreground", "--timeout=90s")
	if err := h.gone(a, "configmap", "victim-dep"); err != nil {
		t.Error(err)
	}
	h.mustKubectl(b, "patch", "configmap", "holder", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	// By now the collector has handled everything created after it; the
	// reference to an unknown kind is still there.
	if out := h.mustKubectl(a, "get", "configmap", "unknown-owner", "-o", "jsonpath={.metadata.deletionTimestamp}"); out != "" {
		t.Errorf("dependent of an owner of unknown kind is being deleted (%s)", out)
	}
}

// gcCRDDeleted: a ConfigMap in foreground deletion waits for a blocking
// Sprocket that cannot go (a finalizer holds it); deleting the Sprocket
// CRD purges its instances and the wait ends. The collector then keeps
// working for the CRDs that remain.
func gcCRDDeleted(t *testing.T, h *hubProc, ws string) {
	h.mustApply("root", gcCRD("sprockets", "Sprocket"), "create")
	h.mustKubectl("root", "wait", "--for=condition=Established", "crd/sprockets.gc.example.com", "--timeout=60s")
	h.mustKubectl(ws, "create", "configmap", "waits")
	uid := h.uidOf(ws, "configmap", "waits")
	h.mustApply(ws, ownedBy("Sprocket", "held", "v1", "ConfigMap", "waits", uid, "  finalizers: [example.com/hold]\n"), "create")
	h.mustKubectl(ws, "delete", "configmap", "waits", "--cascade=foreground", "--wait=false")
	eventually(t, 90*time.Second, func() error {
		ts := h.mustKubectl(ws, "get", "sprocket", "held", "-o", "jsonpath={.metadata.deletionTimestamp}")
		if ts == "" {
			return fmt.Errorf("blocking sprocket not deleted in the foreground yet")
		}
		return nil
	})
	if out := h.mustKubectl(ws, "get", "configmap", "waits", "-o", "jsonpath={.metadata.finalizers}"); !strings.Contains(out, "foregroundDeletion") {
		t.Fatalf("owner does not wait for its blocking dependent: finalizers %s", out)
	}
	h.mustKubectl("root", "delete", "crd", "sprockets.gc.example.com", "--timeout=90s")
	eventually(t, 90*time.Second, func() error { return h.gone(ws, "configmap", "waits") })

	h.mustApply(ws, gadget("after"), "create")
	afterUID := h.uidOf(ws, "gadget", "after")
	h.mustApply(ws, ownedBy("ConfigMap", "after-dep", "gc.example.com/v1", "Gadget", "after", afterUID, ""), "create")
	h.mustKubectl(ws, "delete", "gadget", "after", "--cascade=foreground", "--timeout=90s")
	if err := h.gone(ws, "configmap", "after-dep"); err != nil {
		t.Error(err)
	}
}

// gcHubKinds: the hub's own kinds are owners too. A ConfigMap owned by a
// child Workspace is collected once the Workspace is gone.
func gcHubKinds(t *testing.T, h *hubProc, ws string) {
	h.createWorkspace(ws, "kid")
	uid := h.uidOf(ws, "workspace", "kid")
	h.mustApply(ws, ownedBy("ConfigMap", "of-kid", "tenancy.wharf.dev/v1alpha1", "Workspace", "kid", uid, ""), "create")
	h.mustKubectl(ws, "delete", "workspace", "kid", "--wait=false")
	eventually(t, 120*time.Second, func() error { return h.gone(ws, "configmap", "of-kid") })
}
