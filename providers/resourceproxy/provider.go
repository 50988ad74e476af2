package resourceproxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/wharfhub/wharf/sdk"
)

// MetricsGroup may read /metrics through the backend proxy: the series
// name targets of every workspace, so ordinary workspace users may not.
const MetricsGroup = "system:masters"

// Provider is the resource-proxy plugin.
type Provider struct {
	Routes  *Routes
	Metrics *Metrics
	// handler is set by Start; the hub sends no request before Start
	// returns.
	handler *Handler
	stop    context.CancelFunc
}

// New returns the provider.
func New() *Provider { return &Provider{Routes: NewRoutes(), Metrics: NewMetrics()} }

// Manifest declares the provider; replicas: any, because every request
// carries what it needs and the routing comes from the hub's store.
func (p *Provider) Manifest() sdk.Manifest {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		id, ok := sdk.IdentityFrom(r)
		if !ok || r.Header.Get(HeaderOriginalPath) != "" || !slices.Contains(id.Groups, MetricsGroup) {
			writeErr(w, apierrors.NewNotFound(schema.GroupResource{}, ""))
			return
		}
		p.Metrics.Handler().ServeHTTP(w, r)
	})
	mux.Handle("/apis/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { p.handler.ServeHTTP(w, r) }))
	return sdk.Manifest{
		Name: ProviderName, DisplayName: "Resource proxy", Version: "v0.1.0", Category: "platform",
		Description: "Serves a workspace's custom resources from another workspace or cluster.",
		Backend:     mux, CRDObjects: []any{CRD()}, Replicas: sdk.ReplicasAny,
	}
}

// Start reads the config (the target policy) and runs the controller for
// the provider's life.
func (p *Provider) Start(sctx context.Context, hc sdk.HubConfig) error {
	if hc.RestConfig == nil {
		return errors.New("resource-proxy: the hub gave no credentials")
	}
	ctx, cancel := context.WithCancel(context.Background())
	policy, err := policyFor(sctx, hc)
	if err != nil {
		cancel()
		return err
	}
	c := clock.RealClock{}
	targets := NewTargets(ctx, hc.RestConfig, NewHubSecrets(hc.RestConfig), c, p.Metrics, policy)
	p.handler = NewHandler(p.Routes, targets, NewHubNamespaces(hc.RestConfig), p.Metrics, c)
	p.Metrics.WatchPeers(p.Routes, targets)
	ctrl, err := NewController(hc.RestConfig, p.Routes, targets)
	if err != nil {
		cancel()
		return err
	}
	p.stop = cancel
	go ctrl.Run(klog.NewContext(ctx, klog.Background().WithName("resource-proxy")))
	return nil
}

// Stop ends the controller and the peer watches.
func (p *Provider) Stop(context.Context) error {
	if p.stop != nil {
		p.stop()
	}
	return nil
}

// hubSecrets reads kubeconfig Secrets of client workspaces as the
// provider; RBAC in the client workspace decides.
type hubSecrets struct{ ns *hubNamespaces }

// NewHubSecrets reads Secrets on the hub with the provider's identity.
func NewHubSecrets(cfg *rest.Config) SecretReader {
	return &hubSecrets{ns: newHubNamespaces(cfg)}
}

func (h *hubSecrets) Get(ctx context.Context, cluster, ns, name string) (map[string][]byte, string, error) {
	cs, err := h.ns.clients.For(cluster)
	if err != nil {
		return nil, "", err
	}
	s, err := cs.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsForbidden(err):
		return nil, "", &errSecret{ReasonSecretForbidden, fmt.Sprintf(
			"the provider may not read secret %s/%s: grant user system:wharf:provider:%s get on it (a Role and RoleBinding in namespace %s)", ns, name, ProviderName, ns)}
	case apierrors.IsNotFound(err):
		return nil, "", &errSecret{ReasonSecretInvalid, fmt.Sprintf("secret %s/%s not found", ns, name)}
	case err != nil:
		return nil, "", fmt.Errorf("read secret %s/%s: %w", ns, name, err)
	}
	return s.Data, s.ResourceVersion, nil
}
