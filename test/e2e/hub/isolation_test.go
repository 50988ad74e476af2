package hub

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func configMapManifest(name, value, extraAnnotation string) string {
	ann := ""
	if extraAnnotation != "" {
		ann = "\n  annotations:\n    wharf.dev/cluster: " + extraAnnotation
	}
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: default%s\ndata:\n  owner: %s\n", name, ann, value)
}

// TestTwoWorkspacesSameNames drives every write path kubectl has through two
// workspaces holding objects of the same names, and checks that neither
// ever sees the other's data.
func TestTwoWorkspacesSameNames(t *testing.T) {
	t.Parallel()
	etcd, endpoints := externalEtcd(t)
	h := startHub(t, hubOptions{etcdServers: endpoints})
	ids := map[string]string{}
	for _, ws := range []string{"team-a", "team-b"} {
		ids[ws] = h.createWorkspace("root", ws)
	}
	a, b := "root:team-a", "root:team-b"

	// create (client-side apply) — team-b forges team-a's cluster annotation.
	h.mustApply(a, configMapManifest("same", "a", ""), "apply")
	h.mustApply(b, configMapManifest("same", "b", ids["team-a"]), "apply")
	// server-side apply
	h.mustApply(a, configMapManifest("ssa", "a", ""), "apply", "--server-side")
	h.mustApply(b, configMapManifest("ssa", "b", ""), "apply", "--server-side")
	// imperative create and patch
	h.mustKubectl(a, "create", "secret", "generic", "creds", "--from-literal=password=alpha")
	h.mustKubectl(b, "create", "secret", "generic", "creds", "--from-literal=password=bravo")
	h.mustKubectl(a, "patch", "configmap", "same", "-p", `{"data":{"patched":"a"}}`)

	for ws, want := range map[string]string{a: "a", b: "b"} {
		for _, name := range []string{"same", "ssa"} {
			if got := h.mustKubectl(ws, "get", "configmap", name, "-o", "jsonpath={.data.owner}"); got != want {
				t.Errorf("%s: configmap %s owner = %q, want %q", ws, name, got, want)
			}
		}
		ann := h.mustKubectl(ws, "get", "configmap", "same", "-o", `jsonpath={.metadata.annotations.wharf\.dev/cluster}`)
		if ann != ids[strings.TrimPrefix(ws, "root:")] {
			t.Errorf("%s: cluster annotation = %q, want %q", ws, ann, ids[strings.TrimPrefix(ws, "root:")])
		}
		names := h.mustKubectl(ws, "get", "configmaps", "-o", "name")
		if names != "configmap/same\nconfigmap/ssa" {
			t.Errorf("%s: list = %q", ws, names)
		}
	}
	if got := h.mustKubectl(b, "get", "configmap", "same", "-o", "jsonpath={.data.patched}"); got != "" {
		t.Errorf("patch in team-a leaked into team-b: %q", got)
	}
	pw := h.mustKubectl(b, "get", "secret", "creds", "-o", "jsonpath={.data.password}")
	if pw != "YnJhdm8=" { // base64("bravo")
		t.Errorf("team-b secret = %q", pw)
	}
	// The root workspace sees none of it.
	if out := h.mustKubectl("root", "get", "configmaps", "-o", "name"); out != "" {
		t.Errorf("root sees configmaps: %q", out)
	}

	// delete in one workspace leaves the other alone
	h.mustKubectl(a, "delete", "configmap", "same")
	if _, err := h.kubectl(a, "get", "configmap", "same"); err == nil {
		t.Error("deleted configmap still readable in team-a")
	}
	if got := h.mustKubectl(b, "get", "configmap", "same", "-o", "jsonpath={.data.owner}"); got != "b" {
		t.Errorf("team-b lost its configmap after team-a's delete: %q", got)
	}

	// storage keys carry the cluster segment
	keys := keysWithPrefix(t, etcd, "/registry/core/configmaps/"+ids["team-b"]+"/")
	if len(keys) != 2 {
		t.Errorf("team-b configmap keys = %v", keys)
	}
}

// TestWatchIsolation runs kubectl get --watch in one workspace while objects
// are created in another.
func TestWatchIsolation(t *testing.T) {
	t.Parallel()
	h := startHub(t, hubOptions{})
	h.createWorkspace("root", "wa")
	h.createWorkspace("root", "wb")
	h.mustKubectl("root:wa", "create", "configmap", "marker")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, h.kubectlBin, "--kubeconfig", h.Kubecfg, "--server", h.URL+"/clusters/root:wa",
		"get", "configmaps", "--watch", "--output-watch-events", "-o", "name")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	lines := make(chan string, 100)
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	next := func() string {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("watch ended")
			}
			return l
		case <-time.After(60 * time.Second):
			t.Fatal("no watch event within 60s")
		}
		return ""
	}
	if l := next(); !strings.Contains(l, "configmap/marker") {
		t.Fatalf("first watch line = %q", l)
	}
	// The watch is established once the initial list is printed. B's
	// object is written first: if it leaked, it would arrive first.
	h.mustKubectl("root:wb", "create", "configmap", "leak-from-b")
	h.mustKubectl("root:wa", "create", "configmap", "seen-in-a")
	h.mustKubectl("root:wb", "delete", "configmap", "leak-from-b")
	h.mustKubectl("root:wa", "delete", "configmap", "seen-in-a")
	// Two events for seen-in-a (added, deleted) and nothing else; kubectl
	// prints names only for -o name, whatever --output-watch-events says.
	for i := 0; i < 2; i++ {
		l := next()
		if strings.Contains(l, "leak-from-b") {
			t.Fatalf("watch in root:wa saw root:wb's event: %q", l)
		}
		if !strings.HasSuffix(l, "configmap/seen-in-a") {
			t.Fatalf("watch line %d = %q, want configmap/seen-in-a", i, l)
		}
	}
}
