package ha

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// snapCRD is a namespaced CRD. Definitions are hub-wide (DESIGN.md), so
// it is created once; its instances are per workspace.
const snapCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"widgets.snap.example.com"},
 "spec":{"group":"snap.example.com","scope":"Namespaced",
  "names":{"plural":"widgets","singular":"widget","kind":"Widget"},
  "versions":[{"name":"v1","served":true,"storage":true,
   "schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object",
    "properties":{"size":{"type":"integer"},"owner":{"type":"string"}}}}}}}]}}`

// snapObjects are what each workspace holds, as kubectl get arguments.
var snapObjects = [][]string{
	{"namespace", "app"},
	{"-n", "app", "configmap", "cfg"},
	{"-n", "app", "secret", "s"},
	{"-n", "app", "serviceaccount", "robot"},
	{"-n", "app", "widget", "w1"},
}

// TestSnapshotExternalEtcd: `wharf-hub snapshot save --etcd-servers` with
// the hub's etcd TLS flags saves the three-member TLS etcd a hub runs on,
// also with one member down; bad TLS material or no reachable member fails
// cleanly and names the cause; the snapshot restored into a new data dir
// brings every workspace and object back, unchanged, on a hub on embedded
// etcd; a non-empty data dir is refused and left as it was.
func TestSnapshotExternalEtcd(t *testing.T) {
	t.Parallel()
	ca := newCA(t)
	cl := startEtcd(t, ca)
	base := t.TempDir()
	src := startExtHub(t, ca, "snap-src", filepath.Join(base, "src"), cl.hubArgs()...)

	workspaces := []string{"root:snap-a", "root:snap-b", "root:snap-a:child"}
	for n, ws := range workspaces {
		i := strings.LastIndex(ws, ":")
		src.mustKubectl(ws[:i], fmt.Sprintf(`{"apiVersion":"tenancy.wharf.dev/v1alpha1","kind":"Workspace","metadata":{"name":%q}}`, ws[i+1:]), "create", "-f", "-")
		src.mustKubectl(ws, "", "create", "namespace", "app")
		src.mustKubectl(ws, "", "-n", "app", "create", "configmap", "cfg", "--from-literal=ws="+ws)
		src.mustKubectl(ws, "", "-n", "app", "create", "secret", "generic", "s", "--from-literal=k="+ws+"-secret")
		src.mustKubectl(ws, "", "-n", "app", "create", "serviceaccount", "robot")
		if n == 0 {
			src.mustKubectl(ws, snapCRD, "create", "-f", "-")
		}
		src.mustKubectl(ws, fmt.Sprintf(`{"apiVersion":"snap.example.com/v1","kind":"Widget","metadata":{"name":"w1","namespace":"app"},"spec":{"size":3,"owner":%q}}`, ws), "create", "-f", "-")
	}

	tlsFlags := []string{"--etcd-cafile", ca.CAFile, "--etcd-certfile", cl.ClientCert, "--etcd-keyfile", cl.ClientKey}
	all := strings.Join(cl.clientURL, ",")
	save := func(file, servers string, extra ...string) []string {
		return append([]string{"snapshot", "save", file, "--etcd-servers", servers}, extra...)
	}

	// All three members up.
	full := filepath.Join(base, "full.db")
	if out, err := snapRun(t, save(full, all, tlsFlags...)...); err != nil || !strings.HasPrefix(out, "Saved "+full) {
		t.Fatalf("snapshot save: %v\n%s", err, out)
	} else {
		t.Logf("%s", strings.TrimSpace(out))
	}
	if fi, err := os.Stat(full); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("snapshot file: %v %v, want mode 0600 (it holds every Secret)", fi, err)
	}

	// Failures: each clean, each naming its cause.
	otherCA := newCA(t)
	none := freePorts(t, 3)
	noFile := filepath.Join(base, "never.db")
	t.Run("wrong CA", func(t *testing.T) {
		snapFails(t, noFile, []string{"x509", "unknown authority"},
			save(noFile, all, "--etcd-cafile", otherCA.CAFile, "--etcd-certfile", cl.ClientCert, "--etcd-keyfile", cl.ClientKey)...)
	})
	t.Run("no client certificate", func(t *testing.T) {
		snapFails(t, noFile, []string{"client certificate", "--etcd-certfile"},
			save(noFile, all, "--etcd-cafile", ca.CAFile)...)
	})
	t.Run("client certificate of another CA", func(t *testing.T) {
		cert, key := otherCA.issue(t, "stranger")
		snapFails(t, noFile, []string{"unknown certificate authority"},
			save(noFile, all, "--etcd-cafile", ca.CAFile, "--etcd-certfile", cert, "--etcd-keyfile", key)...)
	})
	t.Run("no reachable member", func(t *testing.T) {
		var urls []string
		for _, p := range none {
			urls = append(urls, fmt.Sprintf("https://127.0.0.1:%d", p))
		}
		snapFails(t, noFile, append([]string{"connection refused"}, urls...),
			save(noFile, strings.Join(urls, ","), tlsFlags...)...)
	})

	// One member down, listed first: the save takes a live member, and has
	// what was written while the member was down.
	cl.members[0].kill9()
	src.mustKubectl("root:snap-b", "", "-n", "app", "create", "configmap", "while-down", "--from-literal=k=v")
	degraded := filepath.Join(base, "degraded.db")
	if out, err := snapRun(t, save(degraded, all, tlsFlags...)...); err != nil || !strings.HasPrefix(out, "Saved "+degraded) {
		t.Fatalf("snapshot save with member 0 down: %v\n%s", err, out)
	} else {
		t.Logf("member 0 down: %s", strings.TrimSpace(out))
	}
	// Every object of the kinds above, per workspace, as of the save.
	const kinds = "namespaces,configmaps,secrets,serviceaccounts,widgets.snap.example.com"
	lists := map[string][]string{}
	for _, ws := range workspaces {
		lists[ws] = src.names(ws, kinds, "-A")
	}
	// Written after the save: a restore must not have it.
	src.mustKubectl("root:snap-b", "", "-n", "app", "create", "configmap", "after-save")

	// What the restored hub must serve, read from the source now.
	type want struct {
		ws   string
		args []string
		obj  map[string]any
	}
	var wants []want
	for _, ws := range workspaces {
		for _, args := range snapObjects {
			wants = append(wants, want{ws, args, src.object(ws, args...)})
		}
		i := strings.LastIndex(ws, ":")
		ww := src.object(ws[:i], "workspace", ws[i+1:])
		// status.URL names the hub that serves it; the rest must match.
		delete(ww, "status")
		wants = append(wants, want{ws[:i], []string{"workspace", ws[i+1:]}, ww})
	}
	crd := []string{"customresourcedefinition", "widgets.snap.example.com"}
	wants = append(wants, want{"root:snap-b", crd, src.object("root:snap-b", crd...)})
	wants = append(wants, want{"root:snap-b", []string{"-n", "app", "configmap", "while-down"}, src.object("root:snap-b", "-n", "app", "configmap", "while-down")})
	rootWS, aWS := src.names("root", "workspaces"), src.names("root:snap-a", "workspaces")

	// The source stops, so its data dir holds still for the check below.
	if err := src.term(45 * time.Second); err != nil {
		t.Fatalf("stopping the source hub: %v", err)
	}

	// A non-empty data dir is refused and left as it was.
	used := mkdir(t, filepath.Join(base, "used"))
	writeFile(t, filepath.Join(used, "tokens.csv"), []byte("x\n"))
	for _, dir := range []string{used, src.dataDir} {
		before := dirState(t, dir)
		out, err := snapRun(t, "snapshot", "restore", degraded, "--data-dir", dir)
		if err == nil || !strings.Contains(out, "not empty") {
			t.Errorf("restore into non-empty %s: %v\n%s", dir, err, out)
		}
		if after := dirState(t, dir); after != before {
			t.Errorf("a refused restore changed %s:\nbefore:\n%s\nafter:\n%s", dir, before, after)
		}
	}

	restored := filepath.Join(base, "restored")
	if out, err := snapRun(t, "snapshot", "restore", degraded, "--data-dir", restored); err != nil {
		t.Fatalf("snapshot restore: %v\n%s", err, out)
	} else {
		t.Logf("%s", strings.TrimSpace(out))
	}
	dst := startExtHub(t, ca, "snap-dst", restored)
	if got := dst.names("root", "workspaces"); strings.Join(got, " ") != strings.Join(rootWS, " ") {
		t.Errorf("root's workspaces after restore %v, before %v", got, rootWS)
	}
	if got := dst.names("root:snap-a", "workspaces"); strings.Join(got, " ") != strings.Join(aWS, " ") {
		t.Errorf("root:snap-a's workspaces after restore %v, before %v", got, aWS)
	}
	for _, ws := range workspaces {
		if got := dst.names(ws, kinds, "-A"); strings.Join(got, " ") != strings.Join(lists[ws], " ") {
			t.Errorf("%s after restore holds\n%v\nbefore\n%v", ws, got, lists[ws])
		}
	}
	for _, w := range wants {
		got := dst.object(w.ws, w.args...)
		if w.args[0] == "workspace" {
			delete(got, "status")
		}
		sameObject(t, w.ws+" "+strings.Join(w.args, " "), got, w.obj)
	}
	if out, err := dst.kubectl("root:snap-b", "", "-n", "app", "get", "configmap", "after-save"); err == nil || !strings.Contains(out, "NotFound") {
		t.Errorf("an object written after the save came back: %v\n%s", err, out)
	}
	// The restored store is live.
	dst.mustKubectl("root:snap-a:child", "", "-n", "app", "create", "configmap", "after-restore")

	// Two members down: the last one is up but has no quorum, and is not
	// saved from (its copy may lag what the cluster acknowledged).
	cl.members[1].kill9()
	snapFails(t, noFile, []string{"connection refused", "lost its quorum", cl.clientURL[2]}, save(noFile, all, tlsFlags...)...)
}
