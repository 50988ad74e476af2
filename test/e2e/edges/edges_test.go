package edges

import (
	"context"
	"fmt"
	"github.com/wharfhub/wharf/test/testutil"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
)

// TestEdges runs the scenarios that can share one hub and one edge
// cluster, each as its own subtest function, in order (they share
// processes, not edges: each creates its own).
func TestEdges(t *testing.T) {
	e := newEnv(t)
	// Minted now, tried last: by then it has expired.
	expiring := e.startExpiryCheck(t)
	for _, s := range []struct {
		name string
		fn   func(*testing.T, *env)
	}{
		{"KubernetesEdge", testKubernetesEdge},
		{"PerUserIdentity", testPerUserIdentity},
		{"UpgradesByteExact", testUpgradesByteExact},
		{"EgressDenials", testEgressDenials},
		{"JoinTokenAndCredential", testJoinTokenAndCredential},
		{"NetworkCut", testNetworkCut},
		{"SSH", testSSH},
		{"CLIFlow", testCLIFlow},
		{"EdgeProxyAccess", testEdgeProxyAccess},
		{"TwoReplicas", testTwoReplicas},
		{"ExpiredToken", expiring},
	} {
		if !t.Run(s.name, func(t *testing.T) { s.fn(t, e) }) && s.name == "KubernetesEdge" {
			t.Fatal("the basic edge does not work; the rest would only repeat it")
		}
	}
}

// testKubernetesEdge: create → join → Ready → status.URL → kubectl get,
// apply and watch through the edge; the object exists on the edge cluster
// and not on the hub. The agent listens on nothing.
func testKubernetesEdge(t *testing.T, e *env) {
	a, _, ed := e.connectEdge(t, "lab-k8s", v1alpha1.TypeKubernetes, agentOptions{kubeconfig: e.agentKubeconfig})
	if !strings.HasSuffix(ed.Status.URL, "/edgeproxy/clusters/"+e.labID+"/apis/edges.wharf.dev/v1alpha1/edges/lab-k8s/k8s") ||
		!strings.HasPrefix(ed.Status.URL, e.hub.URL+"/services/providers/edges/") {
		t.Fatalf("status.URL = %q", ed.Status.URL)
	}
	if ed.Status.AgentVersion == "" || ed.Status.Hostname == "" || ed.Status.LastHeartbeatTime == nil {
		t.Errorf("status lacks agent facts: %+v", ed.Status)
	}
	for _, c := range []string{v1alpha1.ConditionRegistered, v1alpha1.ConditionConnected} {
		if !conditionTrue(ed.Status.Conditions, c) {
			t.Errorf("condition %s not True: %+v", c, ed.Status.Conditions)
		}
	}
	// The edge cluster's admin impersonates alice, who may do anything
	// in namespace edge-work there.
	e.kube.CreateNamespace(t, "edge-work")
	e.kube.ApplyYAML(t, `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-edit, namespace: edge-work}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edge-test-editor}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
`)
	url := ed.Status.URL
	// The edge cluster's RBAC takes a moment to see a new binding.
	eventually(t, time.Minute, func() error {
		if out, err := e.kubectlAs(t, aliceToken, url, "get", "configmaps", "-n", "edge-work", "-o", "name"); err != nil {
			return fmt.Errorf("kubectl get through the edge: %v\n%s", err, out)
		}
		return nil
	})

	// A watch streams: it is open before the object exists and sees it.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	watch := exec.CommandContext(ctx, e.hub.kubectlBin, "--kubeconfig", "/dev/null", "--server", url, "--token", aliceToken,
		"--certificate-authority", e.caFile, "get", "configmaps", "-n", "edge-work", "--watch-only", "-o", "name")
	watchOut := &testutil.Buffer{}
	watch.Stdout, watch.Stderr = watchOut, watchOut
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = watch.Wait() }()
	// kubectl prints nothing until an event; give the watch a moment to
	// be established by polling the apply until the watch reports it.
	manifest := filepath.Join(t.TempDir(), "cm.yaml")
	if err := os.WriteFile(manifest, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: through-edge\n  namespace: edge-work\ndata:\n  k: v\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := e.kubectlAs(t, aliceToken, url, "apply", "-f", manifest); err != nil {
		t.Fatalf("kubectl apply through the edge: %v\n%s", err, out)
	}
	eventually(t, time.Minute, func() error {
		if !strings.Contains(watchOut.String(), "configmap/through-edge") {
			// A watch started after the create still lists nothing; touch
			// the object so a late watch sees a MODIFIED event.
			_, _ = e.kubectlAs(t, aliceToken, url, "annotate", "--overwrite", "-n", "edge-work", "configmap/through-edge", "touch="+fmt.Sprint(time.Now().UnixNano()))
			return fmt.Errorf("watch saw %q", watchOut.String())
		}
		return nil
	})
	// On the edge cluster, not on the hub.
	cm, err := e.kube.Clientset(t).CoreV1().ConfigMaps("edge-work").Get(context.Background(), "through-edge", metav1.GetOptions{})
	if err != nil || cm.Data["k"] != "v" {
		t.Fatalf("the object is not on the edge cluster: %v %+v", err, cm)
	}
	if out, err := e.hub.kubectl("root:"+labWorkspace, "get", "configmap", "through-edge", "-n", "edge-work"); err == nil {
		t.Fatalf("the object is on the hub too: %s", out)
	}

	// The agent dials out only: no listening socket, TCP or unix. The
	// check itself is checked on a process that does listen: the hub.
	if l, err := listeningSockets(e.hub.pid()); err != nil || len(l) == 0 {
		t.Fatalf("the listener check sees nothing on the hub: %v %v", l, err)
	}
	l, err := listeningSockets(a.pid())
	if err != nil {
		t.Fatal(err)
	}
	if len(l) != 0 {
		t.Fatalf("wharf-agent listens on %v", l)
	}

	// kubectl's view of the Edge: the printer columns.
	out := e.hub.mustKubectl("root:"+labWorkspace, "get", "edge", "lab-k8s")
	if hdr := strings.Fields(strings.SplitN(out, "\n", 2)[0]); strings.Join(hdr, " ") != "NAME TYPE PHASE CONNECTED AGENT AGE" {
		t.Errorf("kubectl get edge columns %v:\n%s", hdr, out)
	}
	if !strings.Contains(out, "kubernetes") || !strings.Contains(out, "Ready") {
		t.Errorf("kubectl get edge:\n%s", out)
	}
}

func conditionTrue(cs []metav1.Condition, typ string) bool {
	for _, c := range cs {
		if c.Type == typ {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}
