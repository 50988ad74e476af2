package edgesbench

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/providers/edges/protocol"
	"github.com/wharfhub/wharf/test/bench/benchkit"
)

// The person who uses the edges: a static-token user of the hub, granted
// cluster-admin in the edges' workspace (so proxy on every edge) and, on
// the edge cluster, cluster-admin too, since the agent impersonates them.
const (
	benchUser  = "bench"
	benchToken = "bench-edges-token-0123456789abcdef"
	workspace  = "edgesbench"
	wsPath     = "root:" + workspace
)

var bindingGVR = schema.GroupVersionResource{Group: "providers.wharf.dev", Version: "v1alpha1", Resource: "providerbindings"}

// env is one hub with the edges provider, enabled in root:edgesbench.
type env struct {
	binDir  string
	hub     *benchkit.Hub
	caPEM   []byte
	tls     *tls.Config
	cluster string            // logical cluster id of root:edgesbench
	dyn     dynamic.Interface // hub admin, in root:edgesbench
	user    *http.Client      // benchUser, hub CA pinned
}

func startEnv(ctx context.Context, binDir string) (*env, error) {
	provider := filepath.Join(binDir, "wharf-provider-edges")
	if _, err := os.Stat(provider); err != nil {
		return nil, fmt.Errorf("edges provider (run make build): %w", err)
	}
	benchkit.Progress("starting wharf-hub with the edges provider")
	hub, err := benchkit.StartHub(ctx, benchkit.Options{
		Bin: filepath.Join(binDir, "wharf-hub"), DirPrefix: "wharf-bench-edges-",
		TokenFile: fmt.Sprintf("%s,%s,%s-uid\n", benchToken, benchUser, benchUser),
		QPS:       500, Burst: 1000,
		Args: []string{"--provider", protocol.ProviderName + "=" + provider},
	})
	if err != nil {
		return nil, err
	}
	e := &env{binDir: binDir, hub: hub}
	if err := e.setup(ctx); err != nil {
		hub.Stop()
		return nil, hub.Annotate(err)
	}
	return e, nil
}

func (e *env) stop() { e.hub.Stop() }

func (e *env) setup(ctx context.Context) error {
	admin := e.hub.Config("")
	e.caPEM = admin.CAData
	if len(e.caPEM) == 0 {
		b, err := os.ReadFile(admin.CAFile)
		if err != nil {
			return fmt.Errorf("hub CA: %w", err)
		}
		e.caPEM = b
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(e.caPEM) {
		return fmt.Errorf("hub CA: no certificate in %s", admin.CAFile)
	}
	e.tls = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	user, err := rest.HTTPClientFor(e.userConfig(""))
	if err != nil {
		return fmt.Errorf("user client: %w", err)
	}
	e.user = user

	rootDyn, err := dynamic.NewForConfig(e.hub.Config("root"))
	if err != nil {
		return err
	}
	if _, err := benchkit.CreateWorkspace(ctx, rootDyn, workspace); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(e.hub.Config(wsPath))
	if err != nil {
		return err
	}
	if err := benchkit.WaitDefaultNamespace(ctx, cs, wsPath); err != nil {
		return err
	}
	ws, err := rootDyn.Resource(benchkit.WorkspaceGVR).Get(ctx, workspace, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get workspace: %w", err)
	}
	e.cluster, _, _ = unstructured.NestedString(ws.Object, "status", "cluster")
	if e.cluster == "" {
		return fmt.Errorf("workspace %s has no status.cluster", wsPath)
	}
	if e.dyn, err = dynamic.NewForConfig(e.hub.Config(wsPath)); err != nil {
		return err
	}
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "providers.wharf.dev/v1alpha1", "kind": "ProviderBinding",
		"metadata": map[string]any{"name": protocol.ProviderName},
		"spec":     map[string]any{"provider": protocol.ProviderName},
	}}
	if err := retry(ctx, time.Minute, func() error {
		_, err := e.dyn.Resource(bindingGVR).Create(ctx, binding, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}); err != nil {
		return fmt.Errorf("bind the edges provider: %w", err)
	}
	// A workspace has no built-in roles: the user's is made here, all of
	// the workspace (proxy on every edge included).
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-user-admin"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}},
			// "access" on "/": the hub's backend proxy asks it before it
			// lets a caller use the workspace.
			{NonResourceURLs: []string{"*"}, Verbs: []string{"*"}},
		},
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("role for %s in %s: %w", benchUser, wsPath, err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-user-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: benchUser}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("grant %s in %s: %w", benchUser, wsPath, err)
	}
	benchkit.Progress("workspace %s (cluster %s): waiting for the Edge API and %s's access", wsPath, e.cluster, benchUser)
	// The hub's RBAC index learns of the binding asynchronously; until it
	// has, the workspace is invisible to benchUser. The provider's
	// backend is where the workspace check bites.
	userDyn, err := dynamic.NewForConfig(e.userConfig(e.hub.URL() + "/clusters/" + wsPath))
	if err != nil {
		return err
	}
	return retry(ctx, 2*time.Minute, func() error {
		if _, err := userDyn.Resource(v1alpha1.GVR).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			return err
		}
		resp, err := e.user.Get(e.backend("/healthz-probe-of-the-workspace-check"))
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		// The hub's refusal, not whatever the provider says of the path.
		if strings.Contains(string(b), "may not access workspace") {
			return fmt.Errorf("backend proxy: %s: %s", resp.Status, b)
		}
		return nil
	})
}

// userConfig is benchUser's rest config for host (the hub if empty),
// pinned to the hub CA, in the edges' workspace.
func (e *env) userConfig(host string) *rest.Config {
	cfg := e.hub.ConfigWithToken("", benchToken)
	if host != "" {
		cfg.Host = host
	}
	cfg.QPS, cfg.Burst = -1, 0 // no client-side rate limit: it would skew latencies
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			r = r.Clone(r.Context())
			r.Header.Set("X-Wharf-Workspace", wsPath)
			return rt.RoundTrip(r)
		})
	}
	return cfg
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// backend is the hub URL of a path on the edges provider's backend.
func (e *env) backend(path string) string {
	return e.hub.URL() + protocol.BackendPrefix + path
}

// createEdge creates Edge name of type t in the edges' workspace.
func (e *env) createEdge(ctx context.Context, name string, t v1alpha1.EdgeType) error {
	spec := map[string]any{"type": string(t)}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": v1alpha1.Kind,
		"metadata": map[string]any{"name": name}, "spec": spec,
	}}
	if _, err := e.dyn.Resource(v1alpha1.GVR).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create edge %s: %w", name, err)
	}
	return nil
}

// joinToken mints a join token for edge name as benchUser.
func (e *env) joinToken(ctx context.Context, name string) (string, error) {
	var out protocol.JoinTokenResponse
	if err := e.postJSON(ctx, e.user, protocol.EgressBase(e.cluster, name)+"/join-token", struct{}{}, &out); err != nil {
		return "", fmt.Errorf("join token for %s: %w", name, err)
	}
	if out.Token == "" {
		return "", fmt.Errorf("join token for %s: empty answer", name)
	}
	return out.Token, nil
}

// join exchanges a join token for the edge's agent credential, on the
// public agent path, as an agent would (no hub credential).
func (e *env) join(ctx context.Context, c *http.Client, name, token string) (string, error) {
	var out protocol.JoinResponse
	if err := e.postJSON(ctx, c, protocol.AgentBase(e.cluster, name)+"/join", protocol.JoinRequest{Token: token}, &out); err != nil {
		return "", fmt.Errorf("join %s: %w", name, err)
	}
	if out.Credential == "" {
		return "", fmt.Errorf("join %s: empty credential", name)
	}
	return out.Credential, nil
}

// bundle is the join bundle of edge name, as `wharf edge create` prints it.
func (e *env) bundle(ctx context.Context, name string, t v1alpha1.EdgeType) (string, error) {
	tok, err := e.joinToken(ctx, name)
	if err != nil {
		return "", err
	}
	return protocol.Bundle{HubURL: e.hub.URL(), CA: string(e.caPEM), Cluster: e.cluster, Edge: name, Type: string(t), Token: tok}.Encode()
}

func (e *env) postJSON(ctx context.Context, c *http.Client, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.backend(path), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Wharf-Workspace", wsPath)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s: %s", strings.SplitN(path, "/edges/", 2)[0]+"/edges/…", resp.Status, bytes.TrimSpace(b))
	}
	return json.Unmarshal(b, out)
}

// edgeStatus reads an Edge's status.
func (e *env) edgeStatus(ctx context.Context, name string) (v1alpha1.EdgeStatus, error) {
	var st v1alpha1.EdgeStatus
	u, err := e.dyn.Resource(v1alpha1.GVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return st, err
	}
	raw, _, _ := unstructured.NestedMap(u.Object, "status")
	b, _ := json.Marshal(raw)
	err = json.Unmarshal(b, &st)
	return st, err
}

// countReady lists the edges and counts those named prefix… whose phase
// is Ready.
func (e *env) countReady(ctx context.Context, prefix string) (int, error) {
	l, err := e.dyn.Resource(v1alpha1.GVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, it := range l.Items {
		if !strings.HasPrefix(it.GetName(), prefix) {
			continue
		}
		if p, _, _ := unstructured.NestedString(it.Object, "status", "phase"); p == string(v1alpha1.PhaseReady) {
			n++
		}
	}
	return n, nil
}

// retry calls fn every 200ms until it succeeds or timeout passes.
func retry(ctx context.Context, timeout time.Duration, fn func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := fn()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// metrics scrapes the provider's /metrics as the hub admin (it is for hub
// admins only), through the hub.
func (e *env) metrics(ctx context.Context) (Samples, error) {
	cfg := e.hub.Config("")
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.backend("/metrics"), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Wharf-Workspace", "root")
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("provider metrics: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, fmt.Errorf("provider metrics: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("provider metrics: %s: %s", resp.Status, bytes.TrimSpace(b))
	}
	return ParseSamples(string(b)), nil
}
