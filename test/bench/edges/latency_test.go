package edgesbench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/test/bench/benchkit"
	"github.com/wharfhub/wharf/test/kube"
)

// runLatency joins a kubernetes edge with a real wharf-agent in front of
// the kube fixture and compares the same list of namespaces (kubectl get
// namespaces) straight to the fixture and through status.URL.
func runLatency(ctx context.Context, e *env, kc *kube.Cluster, work string, n int) (*Latency, error) {
	const name = "lab"
	l := &Latency{Path: "/api/v1/namespaces", N: n}
	direct, err := kubernetes.NewForConfig(noLimit(kc.Config()))
	if err != nil {
		return nil, err
	}
	// The agent impersonates the caller, so the edge cluster's RBAC
	// applies to benchUser: grant them there as they would be.
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-user-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: benchUser}},
	}
	if _, err := direct.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("edge cluster RBAC: %w", err)
	}
	if err := e.createEdge(ctx, name, v1alpha1.TypeKubernetes); err != nil {
		return nil, err
	}
	bundle, err := e.bundle(ctx, name, v1alpha1.TypeKubernetes)
	if err != nil {
		return nil, err
	}
	benchkit.Progress("latency: starting wharf-agent for edge %s", name)
	a, err := startAgent(e, filepath.Join(work, "agent-"+name), bundle, "--kubeconfig", kc.Kubeconfig())
	if err != nil {
		return nil, err
	}
	defer a.stop()
	st, err := waitReady(ctx, e, a, name)
	if err != nil {
		return nil, err
	}
	l.AgentStartToReady = time.Since(a.started)
	edge, err := kubernetes.NewForConfig(ownTransport(e.userConfig(st.URL)))
	if err != nil {
		return nil, err
	}
	list := func(cs kubernetes.Interface) (time.Duration, error) {
		t0 := time.Now()
		_, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		return time.Since(t0), err
	}
	// The first request of each, on a new connection.
	if l.FirstAfterConnect, err = list(edge); err != nil {
		return nil, a.annotate(fmt.Errorf("first GET through the edge: %w", err))
	}
	// A fresh client for the direct side too (direct's connection is warm
	// from the RBAC write above), so both first GETs open a connection.
	fresh, err := kubernetes.NewForConfig(ownTransport(noLimit(kc.Config())))
	if err != nil {
		return nil, err
	}
	if l.FirstDirect, err = list(fresh); err != nil {
		return nil, fmt.Errorf("first GET direct: %w", err)
	}
	benchkit.Progress("latency: %d GETs each way, interleaved", n)
	for range 20 { // warm both paths
		if _, err := list(edge); err != nil {
			return nil, err
		}
		if _, err := list(direct); err != nil {
			return nil, err
		}
	}
	m0, merr := e.metrics(ctx)
	var ds, es []time.Duration
	for i := range n {
		// Alternate which goes first, so drift hits both alike.
		order := []kubernetes.Interface{direct, edge}
		if i%2 == 1 {
			order[0], order[1] = edge, direct
		}
		for _, cs := range order {
			d, err := list(cs)
			if err != nil {
				return nil, fmt.Errorf("GET %d: %w", i, err)
			}
			if cs == direct {
				ds = append(ds, d)
			} else {
				es = append(es, d)
			}
		}
	}
	l.Direct, l.Edge = DistOf(ds), DistOf(es)
	// How many tunnel connections the n requests opened: one per request
	// means no keep-alive reuse between the provider and the agent.
	if m1, err := e.metrics(ctx); merr == nil && err == nil {
		const dials, dur = "wharf_edges_tunnel_dials_total", "wharf_edges_tunnel_dial_duration_seconds"
		l.TunnelDials = int(m1.Sum(dials) - m0.Sum(dials))
		if c := m1.Sum(dur+"_count") - m0.Sum(dur+"_count"); c > 0 {
			l.DialMean = time.Duration((m1.Sum(dur+"_sum") - m0.Sum(dur+"_sum")) / c * float64(time.Second))
		}
	} else {
		l.MetricsErr = errors.Join(merr, err)
	}
	return l, nil
}

func noLimit(c *rest.Config) *rest.Config {
	c.QPS, c.Burst = -1, 0
	return c
}

// ownTransport gives c a transport of its own: client-go shares one per TLS
// configuration, unless a Dial is set, and a shared one would carry warm
// connections into a "first request" measurement.
func ownTransport(c *rest.Config) *rest.Config {
	c.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	return c
}
