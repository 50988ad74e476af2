package hub

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestAggregationTwoReplicas: two hub replicas on one etcd route root:a's
// probe.example.com/v1 identically, to the one process of a replicas:
// single provider (the replica that does not hold it forwards over the
// signed hop, original path included), with the same identity headers,
// and both list the group in a's discovery.
func TestAggregationTwoReplicas(t *testing.T) {
	t.Parallel()
	_, endpoints := externalEtcd(t)
	start := func(name string) *hubProc {
		return aggHub(t, hubOptions{etcdServers: endpoints, extraArgs: []string{"--replica-name", name}}, "aggprobe-single")
	}
	hubs := []*hubProc{start("hub-a"), start("hub-b")}
	a := hubs[0]
	idA := a.createWorkspace("root", "a")
	a.enableProvider("root:a", "aggprobe-single")
	a.registerProbe("root:a", "aggprobe-single", false)
	a.mustApply("root:a", `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: probe-reader
rules:
- apiGroups: ["probe.example.com"]
  resources: ["probes"]
  verbs: ["get", "list"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: alice-probes
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: probe-reader}
subjects: [{kind: User, name: alice}]
`, "apply")
	want := probeEcho{
		User: "alice", Groups: []string{"devs", "system:authenticated"}, Tenant: "root:a", Cluster: idA,
		OriginalPath: "/clusters/root:a/apis/probe.example.com/v1/probes/echo", Provider: "aggprobe-single",
	}
	pids := map[int]bool{}
	eventually(t, 120*time.Second, func() error {
		for i, h := range hubs {
			code, echo, body := h.getEcho("alice-token", "root:a", http.Header{"X-Kedge-User": {"mallory"}, "X-Wharf-Original-Path": {"/forged"}})
			if code != http.StatusOK {
				return fmt.Errorf("replica %d: %d %s", i, code, body)
			}
			pids[echo.Pid] = true
			echo.Pid = 0
			if !reflect.DeepEqual(echo, want) {
				t.Fatalf("replica %d: echo %+v, want %+v", i, echo, want)
			}
		}
		return nil
	})
	if len(pids) != 1 {
		t.Errorf("answered by processes %v, want one", pids)
	}
	// Every request the provider got carried exactly the hub's headers,
	// the hop's own none.
	wantHeaders := http.Header{
		"X-Kedge-User": {"alice"}, "X-Kedge-Groups": {"devs", "system:authenticated"}, "X-Kedge-Tenant": {"root:a"},
		"X-Kedge-Cluster": {idA}, "X-Kedge-Original-Path": {want.OriginalPath},
	}
	for _, r := range a.probeLog("root:a", "aggprobe-single") {
		if r.Path != "/apis/probe.example.com/v1/probes/echo" {
			continue
		}
		if got := kedgeOnly(r.Headers); !reflect.DeepEqual(got, wantHeaders) {
			t.Errorf("provider got %v, want %v", got, wantHeaders)
		}
		for _, k := range []string{"X-Wharf-Original-Path", "X-Wharf-Replica-Assertion", "X-Wharf-Replica-Hop", "Authorization"} {
			if v := r.Headers.Values(k); len(v) > 0 {
				t.Errorf("provider got %s: %v", k, v)
			}
		}
	}
	// Both replicas' discovery has the group (each its own cache).
	for i, h := range hubs {
		eventually(t, 90*time.Second, func() error {
			out, err := h.kubectl("root:a", "--cache-dir", t.TempDir(), "api-resources", "--api-group", "probe.example.com")
			if err != nil || !strings.Contains(out, "probes") {
				return fmt.Errorf("replica %d api-resources: %v %s", i, err, out)
			}
			return nil
		})
	}
	eventually(t, 60*time.Second, func() error {
		for i, h := range hubs {
			if st, reason, err := h.apiServiceCondition("root:a"); err != nil || st != "True" || reason != "Passed" {
				return fmt.Errorf("replica %d: %q %q %v", i, st, reason, err)
			}
		}
		return nil
	})
}
