package edges

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	wetcd "github.com/wharfhub/wharf/hub/etcd"
	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/providers/edges/protocol"
)

// pluginChildren lists the live processes running bin whose parent is
// pid: the plugins one hub runs, told apart from other hubs' by ppid.
func pluginChildren(t *testing.T, pid int, bin string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, en := range entries {
		child, err := strconv.Atoi(en.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", en.Name(), "exe")); err != nil || exe != bin {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", en.Name(), "stat"))
		if err != nil {
			continue
		}
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 1 && fields[0] != "Z" && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// testTwoReplicas: two hub replicas on one etcd, the edges provider
// (replicas: single) running under one of them. The agent connects
// through the other (every pickup is forwarded to the holder) and the edge
// works through both replicas. After kill -9 of the holder the survivor
// takes the lease and starts the provider, the agent reconnects, and the
// edge is Ready and usable again through the survivor.
func testTwoReplicas(t *testing.T, e *env) {
	etcd, err := wetcd.StartEmbedded(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close)
	dir, cfg := writeProviderDir(t), writeConfig(t)
	hubs := map[string]*hubProc{}
	for _, name := range []string{"hub-a", "hub-b"} {
		hubs[name] = startHub(t, hubOptions{etcdServers: []string{etcd.ClientURL}, replicaName: name, providerDir: dir, configFile: cfg})
	}
	bin := edgesProvider(t)
	var holder, other string
	eventually(t, 2*time.Minute, func() error {
		holder, other = "", ""
		total := 0
		for name, h := range hubs {
			n := len(pluginChildren(t, h.pid(), bin))
			total += n
			if n == 1 {
				holder = name
			}
		}
		if total != 1 {
			return fmt.Errorf("%d edges provider processes across both replicas", total)
		}
		return nil
	})
	for name := range hubs {
		if name != holder {
			other = name
		}
	}
	t.Logf("holder %s, other %s", holder, other)

	// The same scenario helpers, pointed at the non-holder.
	r := *e
	r.hub = hubs[other]
	r.caFile = filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(r.caFile, r.hub.CA, 0o600); err != nil {
		t.Fatal(err)
	}
	r.labID = r.hub.createWorkspace(labWorkspace, protocol.ProviderName)
	r.hub.mustApply("root:"+labWorkspace, edgeUserRBAC, "apply")
	// Each replica's bootstrap admin token is its own (from its data
	// dir), and the provider checks the minting caller against the
	// holder; alice, a static-token user both know, mints instead.
	r.hub.grantAdmin(labWorkspace, "alice")
	r.mintAs = aliceToken
	eventually(t, 2*time.Minute, func() error {
		if out, err := r.hub.kubectl("root:"+labWorkspace, "get", "edges"); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	_, _, ed := r.connectEdge(t, "replicated", v1alpha1.TypeKubernetes, agentOptions{kubeconfig: e.agentModeKubeconfig, identity: "agent"})
	path := strings.TrimPrefix(ed.Status.URL, hubURLOf(ed.Status.URL))
	through := func(h *hubProc) error {
		ca := filepath.Join(t.TempDir(), "ca.crt")
		if err := os.WriteFile(ca, h.CA, 0o600); err != nil {
			t.Fatal(err)
		}
		rr := r
		rr.hub, rr.caFile = h, ca
		out, err := rr.kubectlAs(t, aliceToken, h.URL+path, "get", "namespaces", "-o", "name", "--request-timeout=30s")
		if err != nil || !strings.Contains(out, "namespace/kube-system") {
			return fmt.Errorf("through %s: %v %s", h.URL, err, out)
		}
		return nil
	}
	for _, name := range []string{other, holder} {
		if err := through(hubs[name]); err != nil {
			t.Fatalf("before the failover: %v", err)
		}
	}

	killed := time.Now()
	hubs[holder].kill9(t)
	eventually(t, 2*time.Minute, func() error {
		if n := len(pluginChildren(t, hubs[other].pid(), bin)); n != 1 {
			return fmt.Errorf("the survivor runs %d edges providers", n)
		}
		return nil
	})
	// Ready again, on a heartbeat written after the kill: not the stale
	// status the dead holder left.
	eventually(t, 2*time.Minute, func() error {
		ed, err := r.getEdge(t, labWorkspace, "replicated")
		if err != nil {
			return err
		}
		if ed.Status.Phase != v1alpha1.PhaseReady || ed.Status.LastHeartbeatTime == nil || !ed.Status.LastHeartbeatTime.After(killed) {
			return fmt.Errorf("edge %s, heartbeat %v (killed %s)", ed.Status.Phase, ed.Status.LastHeartbeatTime, killed.Format(time.RFC3339))
		}
		return nil
	})
	eventually(t, time.Minute, func() error { return through(hubs[other]) })
	t.Logf("edge usable through the survivor %s after kill -9 of %s", time.Since(killed).Round(time.Second), holder)
}

// hubURLOf is scheme://host of a URL.
func hubURLOf(u string) string {
	if i := strings.Index(u, "/services/"); i > 0 {
		return u[:i]
	}
	return u
}
