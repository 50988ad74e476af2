package ha

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSnapshotSaveRestore: a snapshot of a running hub's embedded etcd,
// restored into a new data dir, brings back every workspace and object,
// as of the moment of the save, on a hub started there.
func TestSnapshotSaveRestore(t *testing.T) {
	// Its own hub on its own data dir: it runs beside the others.
	t.Parallel()
	base := t.TempDir()
	dirA, dirB := filepath.Join(base, "a"), filepath.Join(base, "b")
	a := snapStartHub(t, dirA)

	workspaces := []string{"root:team-a", "root:team-b", "root:team-a:sub"}
	uids := map[string]string{}
	for _, ws := range workspaces {
		i := strings.LastIndex(ws, ":")
		a.mustKubectl(ws[:i], fmt.Sprintf(`{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":%q}}`, ws[i+1:]), "create", "-f", "-")
		a.mustKubectl(ws, "", "create", "namespace", "app")
		a.mustKubectl(ws, "", "-n", "app", "create", "configmap", "cfg", "--from-literal=ws="+ws)
		a.mustKubectl(ws, "", "-n", "app", "create", "secret", "generic", "s", "--from-literal=k="+ws+"-secret")
		uids[ws] = a.mustKubectl(ws, "", "-n", "app", "get", "configmap", "cfg", "-o", "jsonpath={.metadata.uid}")
	}

	rootList := a.mustKubectl("root", "", "get", "workspaces", "-o", "jsonpath={.items[*].metadata.name}")
	file := filepath.Join(base, "hub.db")
	out, err := snapRun(t, "snapshot", "save", file, "--data-dir", dirA)
	if err != nil || !strings.HasPrefix(out, "Saved "+file) {
		t.Fatalf("snapshot save: %v\n%s", err, out)
	}
	t.Logf("%s", strings.TrimSpace(out))
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("snapshot mode %v: it holds every Secret, want 0600", fi.Mode().Perm())
	}
	// Written after the save: a restore must not have it.
	a.mustKubectl("root:team-a", "", "-n", "app", "create", "configmap", "after-save")
	a.stop()

	// A damaged snapshot is refused by its integrity hash.
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(base, "bad.db")
	if err := os.WriteFile(bad, raw[:len(raw)-100], 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := snapRun(t, "snapshot", "restore", bad, "--data-dir", filepath.Join(base, "c")); err == nil {
		t.Fatalf("a truncated snapshot was restored:\n%s", out)
	}
	if out, err := snapRun(t, "snapshot", "restore", file, "--data-dir", dirB); err != nil {
		t.Fatalf("snapshot restore: %v\n%s", err, out)
	}
	if out, err := snapRun(t, "snapshot", "restore", file, "--data-dir", dirB); err == nil || !strings.Contains(out, "already holds an etcd member") {
		t.Fatalf("a second restore into the same data dir: %v\n%s", err, out)
	}
	// The old hub's data dir is refused too: nothing is overwritten.
	if out, err := snapRun(t, "snapshot", "restore", file, "--data-dir", dirA); err == nil {
		t.Fatalf("restore over a used data dir:\n%s", out)
	}

	b := snapStartHub(t, dirB)
	// The chart's exec probe, against the restored hub.
	port := b.url[strings.LastIndex(b.url, ":")+1:]
	if out, err := snapRun(t, "probe", "/readyz", "--data-dir", dirB, "--secure-port", port); err != nil || strings.TrimSpace(out) != "ok" {
		t.Fatalf("wharf-hub probe /readyz: %v\n%s", err, out)
	}
	if out, err := snapRun(t, "probe", "/readyz", "--data-dir", dirA, "--secure-port", port); err == nil {
		t.Fatalf("probe with another hub's token and CA passed:\n%s", out)
	}
	list := b.mustKubectl("root", "", "get", "workspaces", "-o", "jsonpath={.items[*].metadata.name}")
	if list != rootList || !strings.Contains(list, "team-a team-b") {
		t.Fatalf("root's workspaces after restore: %q, before: %q", list, rootList)
	}
	for _, ws := range workspaces {
		if got := b.mustKubectl(ws, "", "-n", "app", "get", "configmap", "cfg", "-o", "jsonpath={.metadata.uid} {.data.ws}"); got != uids[ws]+" "+ws {
			t.Errorf("%s: configmap after restore %q, want %q", ws, got, uids[ws]+" "+ws)
		}
		if got := b.mustKubectl(ws, "", "-n", "app", "get", "secret", "s", "-o", "jsonpath={.data.k}"); got == "" {
			t.Errorf("%s: secret lost in the restore", ws)
		}
	}
	if out, err := b.kubectl("root:team-a", "", "-n", "app", "get", "configmap", "after-save"); err == nil || !strings.Contains(out, "NotFound") {
		t.Fatalf("an object written after the save came back: %v\n%s", err, out)
	}
	// The restored hub writes on: the store is live, not read-only.
	b.mustKubectl("root:team-b", "", "-n", "app", "create", "configmap", "after-restore")
}
