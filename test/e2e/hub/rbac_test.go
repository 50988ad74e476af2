package hub

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rbacHub starts a hub with static tokens for alice, bob and carol, and
// lets alice and carol create workspaces in root.
func rbacHub(t *testing.T) *hubProc {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("alice-token,alice,alice-uid,\"devs\"\nbob-token,bob,bob-uid,\"devs\"\ncarol-token,carol,carol-uid,\"ops\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHub(t, hubOptions{extraArgs: []string{"--token-auth-file", tokens}})
	h.mustKubectl("root", "create", "clusterrole", "workspace-creator", "--verb=create", "--resource=workspaces.tenancy.wharf.dev")
	h.mustKubectl("root", "create", "clusterrolebinding", "workspace-creators", "--clusterrole=workspace-creator", "--user=alice", "--user=carol")
	return h
}

// as runs kubectl with a user's token instead of the admin's.
func (h *hubProc) as(who, ws string, args ...string) (string, error) {
	return h.kubectl(ws, append([]string{"--token", who + "-token"}, args...)...)
}

func (h *hubProc) mustAs(who, ws string, args ...string) string {
	h.t.Helper()
	out, err := h.as(who, ws, args...)
	if err != nil {
		h.t.Fatalf("kubectl as %s in %s %v: %v\n%s", who, ws, args, err, out)
	}
	return out
}

// TestWorkspaceOwnership: the creator administers the workspace; others
// get nothing until bound, and then exactly what the binding says.
func TestWorkspaceOwnership(t *testing.T) {
	t.Parallel()
	h := rbacHub(t)
	h.mustApply("", "apiVersion: tenancy.wharf.dev/v1alpha1\nkind: Workspace\nmetadata:\n  name: alice-ws\n", "create", "--token", "alice-token")
	id := h.mustKubectl("root", "get", "workspace", "alice-ws", "-o", "jsonpath={.status.cluster}")
	ws := "root:alice-ws"
	h.mustAs("alice", ws, "create", "configmap", "mine", "--from-literal=k=v")
	h.mustAs("alice", ws, "create", "namespace", "team")
	h.mustAs("alice", ws, "get", "clusterrolebindings")

	for _, target := range []string{ws, id} {
		for _, args := range [][]string{
			{"get", "namespaces"},
			{"get", "configmaps", "-A"},
			{"get", "configmap", "mine"},
			{"create", "configmap", "bobs"},
			{"delete", "configmap", "mine"},
			{"get", "configmaps", "--watch", "--request-timeout=5s"},
		} {
			if out, err := h.as("bob", target, args...); err == nil || !forbidden(out) {
				t.Errorf("bob %v in %s: err=%v out=%q", args, target, err, out)
			}
		}
	}
	// bob cannot learn the workspace exists from its parent either.
	if out, err := h.as("bob", "root", "get", "workspaces"); err == nil {
		t.Errorf("bob listed root's workspaces: %s", out)
	}

	h.mustAs("alice", ws, "create", "clusterrolebinding", "bob-view", "--clusterrole=view", "--user=bob")
	eventuallyAllowed(t, h, "bob", ws, "get", "configmap", "mine", "-o", "name")
	if out, err := h.as("bob", ws, "create", "configmap", "bobs"); err == nil || !strings.Contains(out, "forbidden") {
		t.Errorf("bob with view created a configmap: err=%v %s", err, out)
	}
	if out, err := h.as("bob", ws, "get", "secrets"); err == nil {
		t.Errorf("view grants secrets: %s", out)
	}

	// Being admin of a parent grants nothing in a child someone else made.
	h.mustAs("alice", ws, "create", "clusterrole", "workspace-creator", "--verb=create", "--resource=workspaces.tenancy.wharf.dev")
	h.mustAs("alice", ws, "create", "clusterrolebinding", "carol-creates", "--clusterrole=workspace-creator", "--user=carol")
	eventually(t, 30e9, func() error {
		out, err := h.applyStdin(ws, "apiVersion: tenancy.wharf.dev/v1alpha1\nkind: Workspace\nmetadata:\n  name: carols\n", "create", "--token", "carol-token")
		if err != nil && !strings.Contains(out, "AlreadyExists") {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	child := ws + ":carols"
	h.mustAs("carol", child, "create", "configmap", "carols")
	if out, err := h.as("alice", child, "get", "configmaps"); err == nil || !forbidden(out) {
		t.Errorf("parent admin read the child: err=%v %s", err, out)
	}
}

// forbidden reports whether kubectl output is a 403. A caller with no grant
// in a workspace is refused even discovery there (issue 11.9), and kubectl
// reports a forbidden discovery as "Error from server (Forbidden): unknown",
// as with kube-apiserver.
func forbidden(out string) bool { return strings.Contains(strings.ToLower(out), "forbidden") }

// eventuallyAllowed retries while a new binding reaches the RBAC index.
func eventuallyAllowed(t *testing.T, h *hubProc, who, ws string, args ...string) {
	t.Helper()
	eventually(t, 30e9, func() error {
		if out, err := h.as(who, ws, args...); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
}

// TestEscalationPrevented: a user who may write RoleBindings still cannot
// bind a role holding permissions they lack.
func TestEscalationPrevented(t *testing.T) {
	t.Parallel()
	h := rbacHub(t)
	h.mustApply("", "apiVersion: tenancy.wharf.dev/v1alpha1\nkind: Workspace\nmetadata:\n  name: esc\n", "create", "--token", "alice-token")
	ws := "root:esc"
	h.mustAs("alice", ws, "create", "rolebinding", "bob-edit", "--clusterrole=edit", "--user=bob", "-n", "default")
	h.mustAs("alice", ws, "create", "role", "binder", "--verb=create,get,list", "--resource=rolebindings.rbac.authorization.k8s.io", "-n", "default")
	h.mustAs("alice", ws, "create", "rolebinding", "bob-binder", "--role=binder", "--user=bob", "-n", "default")
	eventuallyAllowed(t, h, "bob", ws, "get", "rolebindings", "-n", "default")

	out, err := h.as("bob", ws, "create", "rolebinding", "grab-admin", "--clusterrole=admin", "--user=bob", "-n", "default")
	if err == nil || !strings.Contains(out, "forbidden") {
		t.Fatalf("bob bound admin: err=%v %s", err, out)
	}
	// Binding what bob already holds is fine.
	h.mustAs("bob", ws, "create", "rolebinding", "share-view", "--clusterrole=view", "--user=carol", "-n", "default")
	// A Role granting more than bob has is refused too.
	h.mustAs("alice", ws, "create", "role", "role-writer", "--verb=create", "--resource=roles.rbac.authorization.k8s.io", "-n", "default")
	h.mustAs("alice", ws, "create", "rolebinding", "bob-role-writer", "--role=role-writer", "--user=bob", "-n", "default")
	eventually(t, 30e9, func() error {
		out, err := h.as("bob", ws, "create", "role", "too-much", "--verb=*", "--resource=*", "-n", "default")
		if err == nil {
			return fmt.Errorf("bob created an escalating role")
		}
		if !strings.Contains(out, "forbidden") || strings.Contains(out, "cannot create resource \"roles\"") {
			return fmt.Errorf("not an escalation refusal yet: %s", out)
		}
		return nil
	})
}

// TestAuthCanI asks kubectl auth can-i as three users in three workspaces.
func TestAuthCanI(t *testing.T) {
	t.Parallel()
	h := rbacHub(t)
	h.mustApply("", "apiVersion: tenancy.wharf.dev/v1alpha1\nkind: Workspace\nmetadata:\n  name: a-ws\n", "create", "--token", "alice-token")
	h.mustApply("", "apiVersion: tenancy.wharf.dev/v1alpha1\nkind: Workspace\nmetadata:\n  name: c-ws\n", "create", "--token", "carol-token")
	h.mustAs("alice", "root:a-ws", "create", "rolebinding", "bob-view", "--clusterrole=view", "--user=bob", "-n", "default")
	eventuallyAllowed(t, h, "bob", "root:a-ws", "get", "configmaps", "-n", "default")

	tests := []struct {
		who, ws, verb, resource string
		want                    string
	}{
		{"alice", "root:a-ws", "create", "configmaps", "yes"},
		{"alice", "root:a-ws", "create", "rolebindings", "yes"},
		// Where nobody bound them, people are refused even the question,
		// exactly as in a workspace that does not exist (issue 11.9).
		{"alice", "root:c-ws", "get", "configmaps", "denied"},
		{"alice", "root", "create", "workspaces.tenancy.wharf.dev", "yes"},
		{"alice", "root", "list", "configmaps", "no"},
		{"bob", "root:a-ws", "list", "configmaps", "yes"},
		{"bob", "root:a-ws", "create", "configmaps", "no"},
		{"bob", "root:a-ws", "get", "secrets", "no"},
		{"bob", "root:c-ws", "list", "configmaps", "denied"},
		{"bob", "root", "create", "workspaces.tenancy.wharf.dev", "no"},
		{"carol", "root:c-ws", "delete", "namespaces", "yes"},
		{"carol", "root:a-ws", "list", "configmaps", "denied"},
		{"carol", "root", "list", "configmaps", "no"},
	}
	for _, tt := range tests {
		out, _ := h.as(tt.who, tt.ws, "auth", "can-i", tt.verb, tt.resource, "-n", "default")
		if tt.want == "denied" {
			if !strings.Contains(out, "workspace access not permitted") {
				t.Errorf("%s in %s: can-i %s %s = %q, want a workspace access denial", tt.who, tt.ws, tt.verb, tt.resource, out)
			}
			continue
		}
		// kubectl warns first when -n is given for a cluster-scoped resource.
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if got := strings.Fields(lines[len(lines)-1] + " ")[0]; got != tt.want {
			t.Errorf("%s in %s: can-i %s %s = %q, want %s", tt.who, tt.ws, tt.verb, tt.resource, out, tt.want)
		}
	}
	if out := h.mustAs("bob", "root:a-ws", "auth", "can-i", "--list", "-n", "default"); !strings.Contains(out, "configmaps") {
		t.Errorf("bob's rule list lacks configmaps: %s", out)
	}
}

// TestIsolationFuzz tries, as bob, every verb on every resource served in
// alice's workspace, by path and by id, over raw HTTP. None may succeed.
func TestIsolationFuzz(t *testing.T) {
	t.Parallel()
	h := rbacHub(t)
	h.mustApply("", "apiVersion: tenancy.wharf.dev/v1alpha1\nkind: Workspace\nmetadata:\n  name: fort\n", "create", "--token", "alice-token")
	id := h.mustKubectl("root", "get", "workspace", "fort", "-o", "jsonpath={.status.cluster}")
	h.mustAs("alice", "root:fort", "create", "configmap", "target")
	h.mustApply("root", widgetCRD, "apply")
	h.mustKubectl("root", "wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=60s")

	resources := h.mustKubectl("root:fort", "api-resources", "--no-headers", "-o", "wide")
	var tried, succeeded int
	for _, line := range strings.Split(resources, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		name := f[0]
		// Self reviews are tried too: in a workspace that grants bob
		// nothing they are refused like everything else (issue 11.9).
		// Columns: NAME [SHORTNAMES] APIVERSION NAMESPACED KIND VERBS...
		i := 1
		if !strings.Contains(f[i], "/") && f[i] != "v1" {
			i++
		}
		apiVersion, namespaced := f[i], f[i+1] == "true"
		base := "/api/v1"
		if apiVersion != "v1" {
			base = "/apis/" + apiVersion
		}
		for _, target := range []string{"root:fort", id} {
			coll := "/clusters/" + target + base
			if namespaced {
				coll += "/namespaces/default"
			}
			coll += "/" + name
			for _, req := range []struct{ method, path, body string }{
				{http.MethodGet, coll, ""},
				{http.MethodGet, coll + "?watch=1&timeoutSeconds=1", ""},
				{http.MethodGet, coll + "/target", ""},
				{http.MethodPost, coll, "{}"},
				{http.MethodPut, coll + "/target", "{}"},
				{http.MethodPatch, coll + "/target", "{}"},
				{http.MethodDelete, coll + "/target", ""},
				{http.MethodDelete, coll, ""},
			} {
				tried++
				code, body := h.doAs("bob-token", req.method, req.path, req.body)
				if code < 300 {
					succeeded++
					t.Errorf("bob %s %s = %d %s", req.method, req.path, code, body)
				}
			}
		}
	}
	t.Logf("isolation fuzz: %d requests as bob, %d succeeded", tried, succeeded)
	if tried < 100 {
		t.Fatalf("only %d requests tried; resource discovery failed:\n%s", tried, resources)
	}
}

// TestAdminFlags: --admin-user makes a user a hub-wide administrator,
// wildcard included, without any binding.
func TestAdminFlags(t *testing.T) {
	t.Parallel()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("dana-token,dana,dana-uid,\"ops\"\nbob-token,bob,bob-uid,\"devs\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHub(t, hubOptions{extraArgs: []string{"--token-auth-file", tokens, "--admin-user", "dana"}})
	h.createWorkspace("root", "any")
	h.mustAs("dana", "root:any", "create", "configmap", "x")
	if out := h.mustAs("dana", "*", "get", "configmaps", "-A", "-o", "name"); !strings.Contains(out, "configmap/x") {
		t.Errorf("dana's wildcard list = %q", out)
	}
	if code, body := h.doAs("bob-token", http.MethodGet, "/clusters/*/api/v1/configmaps", ""); code != http.StatusForbidden {
		t.Errorf("bob's wildcard list = %d %s", code, body)
	}
}

// TestWorkspaceAdminStaysInside: a workspace's admin holds "*" on "*"
// there, yet cannot impersonate hub identities (an impersonated name is
// confined to the workspace, never an administrator) or change the hub-wide
// CustomResourceDefinitions; it can still impersonate ordinary users.
func TestWorkspaceAdminStaysInside(t *testing.T) {
	t.Parallel()
	h := rbacHub(t)
	h.mustApply("", "apiVersion: tenancy.wharf.dev/v1alpha1\nkind: Workspace\nmetadata:\n  name: inside\n", "create", "--token", "alice-token")
	ws := "root:inside"
	eventuallyAllowed(t, h, "alice", ws, "get", "configmaps", "-n", "default")
	for _, args := range [][]string{
		{"get", "namespaces", "--as=mallory", "--as-group=system:masters"},
		{"get", "namespaces", "--as=wharf-admin"},
		{"get", "namespaces", "--as=system:wharf:provider:example"},
		{"create"},
	} {
		var out string
		var err error
		if args[0] == "create" {
			out, err = h.applyStdin(ws, widgetCRD, append(args, "--token", "alice-token")...)
		} else {
			out, err = h.as("alice", ws, args...)
		}
		if err == nil || !strings.Contains(out, "forbidden") {
			t.Errorf("alice %v in her workspace: err=%v %s", args, err, out)
		}
	}
	// Impersonating bob works; bob himself has no access there.
	if out, _ := h.as("alice", ws, "get", "configmaps", "-n", "default", "--as=bob"); !strings.Contains(out, `User "bob" cannot list`) {
		t.Errorf("alice impersonating bob: %s", out)
	}
}
