package edges

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/providers/edges/protocol"
	"github.com/wharfhub/wharf/test/kube"
)

// Short liveness intervals for tests (the provider's config file): a
// keep-alive every 2 s and a 6 s read deadline, so a 60 s session spans
// many keep-alives and a cut is noticed in seconds; in production the
// spec's 18 s / 60 s apply. joinTokenTTL is long enough for any join in a
// test and short enough that the expiry test can outwait it.
const testProviderConfig = `keepAliveInterval: 2s
readDeadline: 6s
heartbeatInterval: 10s
startupGrace: 10s
joinTokenTTL: 45s
credentialRotation: 1h
`

// joinTokenTTL matches testProviderConfig.
const joinTokenTTL = 45 * time.Second

// edgeAgentUser is the agent's own identity on the edge cluster, used in
// --identity agent mode.
const edgeAgentUser = "edge-agent"

// labWorkspace is where alice and bob reach edges; carolWorkspace is
// carol's own, with the edges provider enabled too.
const (
	labWorkspace   = "lab"
	carolWorkspace = "carolws"
)

// writeProviderDir makes a --provider-dir holding only the edges provider
// and the probe provider (symlinks: the hub stats through them, and
// /proc/<pid>/exe shows the real binaries).
func writeProviderDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, bin := range map[string]string{
		"wharf-provider-edges":     edgesProvider(t),
		"wharf-provider-edgeprobe": probeProvider(t),
	} {
		if err := os.Symlink(bin, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func writeConfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "edges.yaml")
	if err := os.WriteFile(p, []byte(testProviderConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// edgeUserRBAC lets alice and bob use (proxy) and read the edges of a
// workspace, and use it through provider backends.
const edgeUserRBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: edge-user}
rules:
- apiGroups: [edges.wharf.dev]
  resources: [edges]
  verbs: [get, list, watch, proxy]
- nonResourceURLs: ["/"]
  verbs: [access]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: edge-users}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edge-user}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}
`

// env is what TestEdges' scenarios share: one hub, one edge cluster.
type env struct {
	hub     *hubProc
	kube    *kube.Cluster
	echo    *upgradeEcho
	labID   string
	carolID string
	// agentKubeconfig is the edge cluster's admin (may impersonate);
	// agentModeKubeconfig is edgeAgentUser's.
	agentKubeconfig     string
	agentModeKubeconfig string
	caFile              string // the hub's CA, for kubectl --certificate-authority
	// mintAs is the token join tokens are minted with; "" means the
	// hub's admin.
	mintAs string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{}
	e.kube = kube.Start(t, kube.Options{Users: []kube.User{{Name: edgeAgentUser}}})
	e.hub = startHub(t, hubOptions{providerDir: writeProviderDir(t), configFile: writeConfig(t)})
	e.echo = startUpgradeEcho(t)
	e.caFile = filepath.Join(t.TempDir(), "hub-ca.crt")
	if err := os.WriteFile(e.caFile, e.hub.CA, 0o600); err != nil {
		t.Fatal(err)
	}
	e.agentKubeconfig = e.kube.Kubeconfig()
	e.agentModeKubeconfig = e.kube.WriteKubeconfig(t, edgeAgentUser, e.kube.UserConfig(t, edgeAgentUser))
	// No controller-manager runs on the fixture, so the aggregated
	// roles (view, edit, admin) stay empty: the tests' roles are explicit.
	// The agent's own identity (agent mode) may read configmaps and
	// namespaces everywhere.
	e.kube.ApplyYAML(t, fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: edge-test-reader}
rules: [{apiGroups: [""], resources: [namespaces, configmaps], verbs: [get, list, watch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: edge-test-editor}
rules: [{apiGroups: [""], resources: [configmaps], verbs: ["*"]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: edge-agent-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edge-test-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: %s}]
`, edgeAgentUser))

	e.labID = e.hub.createWorkspace(labWorkspace, protocol.ProviderName)
	e.carolID = e.hub.createWorkspace(carolWorkspace, protocol.ProviderName)
	// alice and bob may use (proxy) and read edges in lab, and use the
	// workspace through provider backends ("access" on "/", which the CLI
	// needs: it names the workspace in X-Wharf-Workspace); carol is admin
	// of her own workspace only.
	e.hub.mustApply("root:"+labWorkspace, edgeUserRBAC, "apply")
	e.hub.grantAdmin(carolWorkspace, "carol")
	// The Edge kind is served once the provider runs and the binding
	// took effect.
	for _, ws := range []string{labWorkspace, carolWorkspace} {
		eventually(t, 2*time.Minute, func() error {
			if out, err := e.hub.kubectl("root:"+ws, "get", "edges"); err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		})
	}
	return e
}

// createEdge creates an Edge as the admin in root:<ws>.
func (e *env) createEdge(t *testing.T, ws, name string, typ v1alpha1.EdgeType) {
	t.Helper()
	e.hub.mustApply("root:"+ws, fmt.Sprintf("apiVersion: edges.wharf.dev/v1alpha1\nkind: Edge\nmetadata:\n  name: %s\nspec:\n  type: %s\n", name, typ), "create")
}

// mintToken asks the provider for a join token as the caller (token).
func (e *env) mintToken(t *testing.T, token, cluster, ws, name string) (int, protocol.JoinTokenResponse, string) {
	t.Helper()
	var out protocol.JoinTokenResponse
	code, body := e.hub.do(token, http.MethodPost, protocol.BackendPrefix+protocol.EgressBase(cluster, name)+"/join-token", "{}",
		http.Header{"X-Wharf-Workspace": {"root:" + ws}})
	if code/100 == 2 {
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			t.Fatalf("join-token answer %q: %v", body, err)
		}
	}
	return code, out, body
}

// bundle mints a token as the admin and returns the encoded join bundle
// pointing at hubURL (the hub's own URL, or a relay in front of it).
func (e *env) bundle(t *testing.T, cluster, ws, name string, typ v1alpha1.EdgeType, hubURL string) (string, string) {
	t.Helper()
	as := e.mintAs
	if as == "" {
		as = e.hub.Token
	}
	code, tok, body := e.mintToken(t, as, cluster, ws, name)
	if code/100 != 2 || tok.Token == "" {
		t.Fatalf("minting a join token for %s: %d %s", name, code, body)
	}
	return encodeBundle(t, protocol.Bundle{HubURL: hubURL, CA: string(e.hub.CA), Cluster: cluster, Edge: name, Type: string(typ), Token: tok.Token}), tok.Token
}

func encodeBundle(t *testing.T, b protocol.Bundle) string {
	t.Helper()
	s, err := b.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// getEdge reads an Edge as the admin.
func (e *env) getEdge(t *testing.T, ws, name string) (*v1alpha1.Edge, error) {
	out, err := e.hub.kubectl("root:"+ws, "get", "edge", name, "-o", "json")
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, out)
	}
	var ed v1alpha1.Edge
	if err := json.Unmarshal([]byte(out), &ed); err != nil {
		return nil, fmt.Errorf("edge %s: %w", name, err)
	}
	return &ed, nil
}

// waitPhase waits until the edge reports phase and returns it.
func (e *env) waitPhase(t *testing.T, ws, name string, phase v1alpha1.Phase, timeout time.Duration) *v1alpha1.Edge {
	t.Helper()
	var ed *v1alpha1.Edge
	eventually(t, timeout, func() error {
		var err error
		if ed, err = e.getEdge(t, ws, name); err != nil {
			return err
		}
		if ed.Status.Phase != phase {
			return fmt.Errorf("edge %s is %q, want %q (conditions %+v)", name, ed.Status.Phase, phase, ed.Status.Conditions)
		}
		return nil
	})
	return ed
}

// connectEdge creates an edge in lab, joins an agent to it through a
// relay and waits for Ready.
func (e *env) connectEdge(t *testing.T, name string, typ v1alpha1.EdgeType, opts agentOptions) (*agentProc, *relay, *v1alpha1.Edge) {
	t.Helper()
	return e.connectEdgeIn(t, labWorkspace, e.labID, name, typ, opts)
}

// connectEdgeIn is connectEdge in any workspace.
func (e *env) connectEdgeIn(t *testing.T, ws, cluster, name string, typ v1alpha1.EdgeType, opts agentOptions) (*agentProc, *relay, *v1alpha1.Edge) {
	t.Helper()
	e.createEdge(t, ws, name, typ)
	r := startRelay(t, strings.TrimPrefix(e.hub.URL, "https://"))
	opts.join, _ = e.bundle(t, cluster, ws, name, typ, "https://"+r.Addr)
	a := startAgent(t, opts)
	ed := e.waitPhase(t, ws, name, v1alpha1.PhaseReady, 2*time.Minute)
	return a, r, ed
}

// kubectlAs runs kubectl against an edge's status.URL with a hub token.
func (e *env) kubectlAs(t *testing.T, token, url string, args ...string) (string, error) {
	dir := t.TempDir()
	// An empty kubeconfig: nothing from the machine's ~/.kube leaks in.
	empty := filepath.Join(dir, "empty.kubeconfig")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	full := append([]string{"--kubeconfig", empty, "--server", url, "--token", token, "--certificate-authority", e.caFile}, args...)
	return runKubectl(e.hub.kubectlBin, dir, "", full...)
}
