package tenantfilter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/providers/tenantfilter/auth"
	"github.com/wharfhub/wharf/providers/tenantfilter/core"
	"github.com/wharfhub/wharf/sdk"
)

// Name is the provider's name in URLs.
const Name = "tenant-filter"

// MetricsGroup may read the backend's /metrics (series of every
// downstream), as for the resource proxy.
const MetricsGroup = "system:masters"

// Provider is the plugin.
type Provider struct {
	registry *prometheus.Registry
	metrics  *core.Metrics

	mu    sync.RWMutex
	cores map[string]*core.Core // downstream name → its filter
	stop  context.CancelFunc
}

// New returns the provider; Start configures its downstreams.
func New() *Provider {
	reg := prometheus.NewRegistry()
	m, err := core.NewMetrics(reg)
	if err != nil {
		panic(err) // a fresh registry cannot collide
	}
	return &Provider{registry: reg, metrics: m, cores: map[string]*core.Core{}}
}

// Manifest declares the provider: replicas any, since each replica keeps
// its own informer caches and no request depends on another's state.
func (p *Provider) Manifest() sdk.Manifest {
	return sdk.Manifest{
		Name: Name, DisplayName: "Tenant filter", Version: "v0.1.0", Category: "platform",
		Description: "Tenant-scoped views of shared Kubernetes clusters (a capsule-proxy replacement).",
		Backend:     p.Backend(), Replicas: sdk.ReplicasAny,
	}
}

// Start reads the config and builds one core per downstream. Informers run
// until Stop.
func (p *Provider) Start(_ context.Context, hc sdk.HubConfig) error {
	cfg, err := ParseConfig(hc.Config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	ctx = klog.NewContext(ctx, klog.Background().WithName(Name))
	cores := map[string]*core.Core{}
	for _, cl := range cfg.Clusters {
		rc, err := clientcmd.BuildConfigFromFlags("", cl.Kubeconfig)
		if err != nil {
			cancel()
			return fmt.Errorf("tenant-filter: cluster %s: %w", cl.Name, err)
		}
		c, err := core.New(ctx, rc, cfg.CoreOptions())
		if err != nil {
			cancel()
			return fmt.Errorf("tenant-filter: cluster %s: %w", cl.Name, err)
		}
		cores[cl.Name] = c
	}
	p.mu.Lock()
	p.cores, p.stop = cores, cancel
	p.mu.Unlock()
	klog.FromContext(ctx).Info("tenant filter started", "downstreams", len(cores))
	return nil
}

// Stop ends every downstream's informers.
func (p *Provider) Stop(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stop != nil {
		p.stop()
	}
	return nil
}

// Healthy is always nil: a downstream whose caches do not sync is not
// something a restart fixes (its requests answer 503 meanwhile), and no
// downstreams at all is a valid configuration.
func (p *Provider) Healthy(context.Context) error { return nil }

// Backend serves /clusters/<downstream>/<kubernetes path> and /metrics.
func (p *Provider) Backend() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		id, ok := sdk.IdentityFrom(r)
		if !ok || !slices.Contains(id.Groups, MetricsGroup) {
			writeStatus(w, apierrors.NewNotFound(schema.GroupResource{}, ""))
			return
		}
		promhttp.HandlerFor(p.registry, promhttp.HandlerOpts{}).ServeHTTP(w, r)
	})
	mux.Handle("/clusters/", http.HandlerFunc(p.serveCluster))
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{}, ""))
	}))
	return mux
}

func (p *Provider) serveCluster(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/clusters/")
	name, sub, _ := strings.Cut(rest, "/")
	p.mu.RLock()
	c := p.cores[name]
	p.mu.RUnlock()
	if c == nil {
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{}, ""))
		return
	}
	id, ok := sdk.IdentityFrom(r)
	if !ok {
		writeStatus(w, apierrors.NewUnauthorized("Unauthorized"))
		return
	}
	caller, ok := downstreamCaller(id)
	if !ok {
		writeStatus(w, apierrors.NewForbidden(schema.GroupResource{}, "",
			fmt.Errorf("hub identity %q is not forwarded to downstream clusters", id.User)))
		return
	}
	if !slices.Contains(caller.Groups, user.AllAuthenticated) {
		caller.Groups = append(caller.Groups, user.AllAuthenticated)
	}
	r2 := r.Clone(core.WithCaller(r.Context(), caller))
	sdk.StripIdentity(r2.Header)
	auth.StripClientHeaders(r2.Header)
	r2.URL.Path = "/" + sub
	r2.URL.RawPath = ""
	r2.RequestURI = ""
	p.metrics.Middleware(c).ServeHTTP(w, r2)
}

// downstreamCaller maps a hub identity to the downstream caller. Names in
// the reserved "system:" space mean something else in each cluster: a hub
// service account (system:serviceaccount:<ns>:<name>, which anyone may
// mint in their own workspace) would become the downstream's service
// account of that name, and the hub's system:masters or
// system:serviceaccounts:<ns> groups the downstream's. Such users are
// refused and such groups dropped (system:authenticated is added back).
func downstreamCaller(id sdk.Identity) (core.Caller, bool) {
	if strings.HasPrefix(id.User, "system:") {
		return core.Caller{}, false
	}
	c := core.Caller{User: id.User}
	for _, g := range id.Groups {
		if !strings.HasPrefix(g, "system:") {
			c.Groups = append(c.Groups, g)
		}
	}
	return c, true
}

// writeStatus answers with a Kubernetes Status.
func writeStatus(w http.ResponseWriter, err error) {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		st = apierrors.NewInternalError(err)
	}
	s := st.Status()
	s.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(s.Code))
	_ = json.NewEncoder(w).Encode(s)
}
