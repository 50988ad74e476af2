package edges

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
)

// testEdgeProxyAccess: the probe provider (edgeProxyAccess: true) reaches
// the edges of a workspace that enabled it, with its own identity, and
// gets 403 from a workspace that did not, whether or not that edge is
// connected.
func testEdgeProxyAccess(t *testing.T, e *env) {
	e.hub.mustApply("root:"+labWorkspace, "apiVersion: providers.wharf.dev/v1alpha1\nkind: ProviderBinding\nmetadata:\n  name: edgeprobe\nspec:\n  provider: edgeprobe\n", "create")
	// Agent mode: whatever the probe's hub identity is called, the edge
	// cluster sees the agent, which may list namespaces.
	e.connectEdge(t, "lab-probed", v1alpha1.TypeKubernetes, agentOptions{kubeconfig: e.agentModeKubeconfig, identity: "agent"})
	e.connectEdgeIn(t, carolWorkspace, e.carolID, "carol-probed", v1alpha1.TypeKubernetes, agentOptions{kubeconfig: e.agentModeKubeconfig, identity: "agent"})

	// The probe answers with exactly the status and body the hub gave it.
	call := func(endpoint string, q url.Values) (int, string) {
		return e.hub.do(aliceToken, http.MethodGet, "/services/providers/edgeprobe/"+endpoint+"?"+q.Encode(), "",
			http.Header{"X-Wharf-Workspace": {"root:" + labWorkspace}})
	}
	probe := func(cluster, edge string) (int, string) {
		return call("probe", url.Values{"cluster": {cluster}, "edge": {edge}, "path": {"/api/v1/namespaces"}})
	}
	eventually(t, time.Minute, func() error {
		if code, body := probe(e.labID, "lab-probed"); code != http.StatusOK || !strings.Contains(body, "kube-system") {
			return fmt.Errorf("probe into lab's edge: %d %s", code, body)
		}
		return nil
	})
	// carol's workspace did not enable the probe: its grant does not
	// reach there, connected edge or missing edge alike.
	for _, name := range []string{"carol-probed", "carol-nothing"} {
		code, body := probe(e.carolID, name)
		if code != http.StatusForbidden || strings.Contains(body, "kube-system") {
			t.Errorf("probe into carol's %s: %d %s, want 403", name, code, body)
		}
	}
	// The grant is the proxy verb on edges and nothing else: no Edge
	// objects, no Secrets, no join tokens in the workspace that enabled it.
	for _, path := range []string{"/apis/edges.wharf.dev/v1alpha1/edges", "/api/v1/secrets", "/api/v1/namespaces/default/configmaps"} {
		if code, body := call("hub", url.Values{"cluster": {e.labID}, "path": {path}}); code != http.StatusForbidden {
			t.Errorf("the probe read %s in lab: %d %s", path, code, body)
		}
	}
}
