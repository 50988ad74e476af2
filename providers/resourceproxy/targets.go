package resourceproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/wharfhub/wharf/providers/resourceproxy/targetpolicy"
	"github.com/wharfhub/wharf/sdk/clusters"
)

// secretRecheck is how long an external target's connection is used before
// its Secret is read again (a changed kubeconfig takes effect then).
const secretRecheck = 30 * time.Second

// SecretReader reads a Secret of a client workspace with the provider's
// own identity; the workspace admin grants that by RBAC.
type SecretReader interface {
	// Get returns the Secret's data and resourceVersion.
	Get(ctx context.Context, cluster, namespace, name string) (data map[string][]byte, resourceVersion string, err error)
}

// errSecret marks a kubeconfig Secret problem (forbidden, missing,
// invalid, or a server address the target policy refuses); the message
// names the Secret at most, never its content.
type errSecret struct{ reason, msg string }

func (e *errSecret) Error() string { return e.msg }

// Targets caches target connections per client cluster and target, so a
// credential of one workspace is never used for another.
type Targets struct {
	hub     *rest.Config // the provider's own identity on the hub
	secrets SecretReader
	clock   clock.WithDelayedExecution
	metrics *Metrics
	ctx     context.Context // bounds the peer watches
	// dial opens a TCP connection to one peer; net.Dialer unless a test
	// replaced it (SetDial) before the first use.
	dial DialFunc
	// policy judges every address an external target's connection dials.
	policy *targetpolicy.Policy
	// onRefusal is told the client cluster whose target's refusal state
	// changed (the controller requeues it); set by SetOnRefusal.
	onRefusal func(cluster string)

	mu sync.Mutex
	// conns is keyed by "<client cluster>|<target key>".
	conns map[string]*cachedConn
}

type cachedConn struct {
	conn      *targetConn
	secretRV  string
	checkedAt time.Time
}

// NewTargets returns the cache. hub may be nil when only external targets
// are used (tests of the proxy alone). policy decides which addresses an
// external target may be dialled at; it is required (targetpolicy.New
// with an empty Config is the built-in default), so a caller whose
// targets are on loopback says so explicitly.
func NewTargets(ctx context.Context, hub *rest.Config, secrets SecretReader, c clock.WithDelayedExecution, m *Metrics, policy *targetpolicy.Policy) *Targets {
	if policy == nil {
		panic("resourceproxy.NewTargets: nil target policy")
	}
	return &Targets{hub: hub, secrets: secrets, clock: c, metrics: m, ctx: ctx, dial: (&net.Dialer{}).DialContext, policy: policy, conns: map[string]*cachedConn{}}
}

// SetOnRefusal registers f, called with the client cluster whenever an
// external target's refusal by the policy starts or ends; call it before
// the first Get.
func (ts *Targets) SetOnRefusal(f func(cluster string)) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.onRefusal = f
}

// DialFunc opens a connection to one peer ("host:port"); it must return
// once ctx is done.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// SetDial replaces the peer dial, before the first request: tests drive a
// dial that never completes to reach the DialTimeout on the injected
// clock. The timeout, health accounting and metrics stay the proxy's own.
func (ts *Targets) SetDial(d DialFunc) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.dial = d
}

func (ts *Targets) dialFunc() DialFunc {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.dial
}

// Get returns the connection for route r.
func (ts *Targets) Get(ctx context.Context, r *Route) (*targetConn, error) {
	key := r.Cluster + "|" + r.Target.Key()
	ts.mu.Lock()
	c := ts.conns[key]
	ts.mu.Unlock()
	if c != nil && (r.Target.External == nil || ts.clock.Since(c.checkedAt) < secretRecheck) {
		return c.conn, nil
	}
	if r.Target.External == nil {
		return ts.workspace(key, r)
	}
	return ts.external(ctx, key, r, c)
}

func (ts *Targets) workspace(key string, r *Route) (*targetConn, error) {
	if ts.hub == nil {
		return nil, errors.New("no hub credentials for a workspace target")
	}
	cfg, err := clusters.ForCluster(ts.hub, r.Target.Workspace)
	if err != nil {
		return nil, fmt.Errorf("target workspace: %w", err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("hub url: %w", err)
	}
	// The hub replicas are the peers; the provider knows the one URL it was
	// given (HubConfig.HubURL), so the list is static and never stale.
	conn, err := newTargetConn(r.Target.Name(), cfg, []string{hostPort(u)}, ts.clock, ts.metrics, ts.dialFunc(), nil)
	if err != nil {
		return nil, err
	}
	conn.toHub = true
	return ts.store(key, &cachedConn{conn: conn, checkedAt: ts.clock.Now()}), nil
}

func (ts *Targets) external(ctx context.Context, key string, r *Route, old *cachedConn) (*targetConn, error) {
	ref := r.Target.External.SecretRef
	data, rv, err := ts.secrets.Get(ctx, r.Cluster, ref.Namespace, ref.Name)
	if err != nil {
		return nil, err
	}
	// A connection whose peers the policy refused is rebuilt from the
	// Secret's server, so a target that fixed its EndpointSlice recovers.
	if old != nil && old.secretRV == rv && old.conn.refusal() == nil {
		ts.mu.Lock()
		old.checkedAt = ts.clock.Now()
		ts.mu.Unlock()
		return old.conn, nil
	}
	kc, ok := data[ref.key()]
	if !ok {
		return nil, &errSecret{ReasonSecretInvalid, fmt.Sprintf("secret %s/%s has no key %q", ref.Namespace, ref.Name, ref.key())}
	}
	cfg, err := KubeconfigConfig(kc)
	if err != nil {
		return nil, &errSecret{ReasonSecretInvalid, fmt.Sprintf("secret %s/%s: %v", ref.Namespace, ref.Name, err)}
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, &errSecret{ReasonSecretInvalid, fmt.Sprintf("secret %s/%s: server url invalid", ref.Namespace, ref.Name)}
	}
	// The server is judged before anything is dialled, so a refused one
	// is reported in the status; a name that does not resolve now is
	// judged when dialled.
	if _, err := ts.policy.Resolve(ctx, u.Hostname()); targetpolicy.IsRefused(err) {
		klog.V(2).InfoS("resource proxy: target server refused by the target policy", "target", r.Target.Name(), "cluster", r.Cluster, "err", err.Error())
		if old != nil {
			// The Secret now names a refused server: the connection to the
			// one it named before must not go on serving.
			if old.conn.stop != nil {
				old.conn.stop()
			}
			ts.mu.Lock()
			if ts.conns[key] == old {
				delete(ts.conns, key)
			}
			ts.mu.Unlock()
		}
		return nil, &errSecret{ReasonTargetAddressRefused, msgServerRefused}
	}
	conn, err := newTargetConn(r.Target.Name(), cfg, []string{hostPort(u)}, ts.clock, ts.metrics, ts.dialFunc(), ts.policy)
	if err != nil {
		return nil, err
	}
	if old != nil && old.conn.refusal() != nil {
		// Rebuilt to see whether the target's peers changed: until its
		// first publication says so, the verdict stays, so the status
		// does not flap.
		conn.refusedPeers.Store(true)
	}
	ts.mu.Lock()
	notify, cluster := ts.onRefusal, r.Cluster
	ts.mu.Unlock()
	if notify != nil {
		conn.onRefusal = func() { notify(cluster) }
	}
	wctx, cancel := context.WithCancel(ts.ctx)
	conn.stop = cancel
	go conn.watchPeers(wctx)
	if old != nil && old.conn.stop != nil {
		old.conn.stop()
	}
	klog.InfoS("resource proxy: target connection", "target", conn.name, "cluster", r.Cluster, "peer", u.Host)
	return ts.store(key, &cachedConn{conn: conn, secretRV: rv, checkedAt: ts.clock.Now()}), nil
}

func (ts *Targets) store(key string, c *cachedConn) *targetConn {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.conns[key] = c
	return c.conn
}

// Each calls f for every cached connection (metrics).
func (ts *Targets) Each(f func(cluster, targetKey string, c *targetConn)) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for k, c := range ts.conns {
		cluster, key, _ := strings.Cut(k, "|")
		f(cluster, key, c.conn)
	}
}

// KubeconfigConfig turns a kubeconfig from a workspace Secret into a rest
// config. The Secret is written by a workspace admin and read by the
// provider process, so anything that would run code or read the
// provider's files is refused: exec and auth-provider plugins, file paths,
// skipped TLS verification, proxies and impersonation (the proxy sets its
// own).
func KubeconfigConfig(kc []byte) (*rest.Config, error) {
	raw, err := clientcmd.Load(kc)
	if err != nil {
		return nil, errors.New("kubeconfig does not parse")
	}
	ctxName := raw.CurrentContext
	kctx := raw.Contexts[ctxName]
	if kctx == nil {
		return nil, errors.New("kubeconfig has no current context")
	}
	cl, ai := raw.Clusters[kctx.Cluster], raw.AuthInfos[kctx.AuthInfo]
	if cl == nil || ai == nil {
		return nil, errors.New("kubeconfig's current context names no cluster or user")
	}
	switch {
	case ai.Exec != nil || ai.AuthProvider != nil:
		return nil, errors.New("kubeconfig exec and auth-provider plugins are not allowed")
	case ai.TokenFile != "" || ai.ClientCertificate != "" || ai.ClientKey != "" || cl.CertificateAuthority != "":
		return nil, errors.New("kubeconfig file paths are not allowed; inline the data")
	case cl.InsecureSkipTLSVerify:
		return nil, errors.New("kubeconfig insecure-skip-tls-verify is not allowed")
	case cl.ProxyURL != "":
		return nil, errors.New("kubeconfig proxy-url is not allowed")
	case ai.Impersonate != "" || len(ai.ImpersonateGroups) > 0 || ai.ImpersonateUID != "" || len(ai.ImpersonateUserExtra) > 0:
		return nil, errors.New("kubeconfig impersonation is not allowed; the proxy impersonates the client workspace")
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, errors.New("kubeconfig is incomplete")
	}
	return cfg, nil
}

func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "http" {
		return u.Host + ":80"
	}
	return u.Host + ":443"
}
