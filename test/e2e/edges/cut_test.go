package edges

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
)

// testNetworkCut: the agent's network goes silent (a black hole: no
// reset, no FIN, exactly what a dropped NAT mapping looks like); the edge
// becomes Disconnected within 90 s, and Ready again once the network is
// back and the agent has reconnected, and it works again.
func testNetworkCut(t *testing.T, e *env) {
	_, r, ed := e.connectEdge(t, "lab-cut", v1alpha1.TypeKubernetes, agentOptions{kubeconfig: e.agentKubeconfig})
	r.Blackhole()
	cut := time.Now()
	e.waitPhase(t, labWorkspace, "lab-cut", v1alpha1.PhaseDisconnected, 90*time.Second)
	t.Logf("Disconnected %s after the cut", time.Since(cut).Round(time.Second))
	if out, err := e.kubectlAs(t, aliceToken, ed.Status.URL, "get", "namespaces", "--request-timeout=20s"); err == nil {
		t.Errorf("a request through a cut tunnel succeeded: %s", out)
	}
	r.Restore()
	e.waitPhase(t, labWorkspace, "lab-cut", v1alpha1.PhaseReady, 2*time.Minute)
	eventually(t, time.Minute, func() error {
		if out, err := e.kubectlAs(t, aliceToken, ed.Status.URL, "auth", "whoami"); err != nil || !strings.Contains(out, "alice") {
			return fmt.Errorf("after reconnect: %v %s", err, out)
		}
		return nil
	})
}
