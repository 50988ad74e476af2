package edges

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
)

// testPerUserIdentity: alice and bob reach the same edge and the edge
// cluster's own RBAC decides, because the agent impersonates each of
// them; in --identity agent mode both act as the agent.
func testPerUserIdentity(t *testing.T, e *env) {
	e.kube.CreateNamespace(t, "alice-only")
	e.kube.ApplyYAML(t, `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-view, namespace: alice-only}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edge-test-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
`)
	_, _, imp := e.connectEdge(t, "lab-impersonate", v1alpha1.TypeKubernetes, agentOptions{kubeconfig: e.agentKubeconfig, identity: "impersonate"})
	_, _, agent := e.connectEdge(t, "lab-agentmode", v1alpha1.TypeKubernetes, agentOptions{kubeconfig: e.agentModeKubeconfig, identity: "agent"})

	whoami := func(token, url string) string {
		t.Helper()
		out, err := e.kubectlAs(t, token, url, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}")
		if err != nil {
			t.Fatalf("kubectl auth whoami through %s: %v\n%s", url, err, out)
		}
		return out
	}
	// Impersonate mode: each person is themself on the edge cluster, with
	// the groups the hub asserts, and never a hub system: group.
	for user, token := range map[string]string{"alice": aliceToken, "bob": bobToken} {
		got := whoami(token, imp.Status.URL)
		fields := strings.Fields(got)
		if len(fields) == 0 || fields[0] != user || !strings.Contains(got, "devs") {
			t.Errorf("%s is %q on the edge cluster", user, got)
		}
	}
	eventually(t, time.Minute, func() error {
		if out, err := e.kubectlAs(t, aliceToken, imp.Status.URL, "get", "configmaps", "-n", "alice-only"); err != nil {
			return fmt.Errorf("alice refused where the edge cluster's RBAC allows her: %v\n%s", err, out)
		}
		return nil
	})
	out, err := e.kubectlAs(t, bobToken, imp.Status.URL, "get", "configmaps", "-n", "alice-only")
	if err == nil || !strings.Contains(out, `User "bob" cannot list resource "configmaps"`) {
		t.Errorf("bob was not refused by the edge cluster's RBAC: %v\n%s", err, out)
	}

	// Agent mode: both are the agent's own identity, which may list
	// namespaces and read alice-only (edge-test-reader), whoever asks.
	for _, token := range []string{aliceToken, bobToken} {
		if got := whoami(token, agent.Status.URL); !strings.HasPrefix(got, edgeAgentUser+" ") && got != edgeAgentUser {
			t.Errorf("agent mode: caller is %q on the edge cluster, want %s", got, edgeAgentUser)
		}
		if out, err := e.kubectlAs(t, token, agent.Status.URL, "get", "configmaps", "-n", "alice-only"); err != nil {
			t.Errorf("agent mode: refused: %v\n%s", err, out)
		}
	}
}
