package edgesbench

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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
