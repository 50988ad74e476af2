package edges

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/providers/edges/protocol"
	"github.com/wharfhub/wharf/revdial"
	"github.com/wharfhub/wharf/sdk"
	"github.com/wharfhub/wharf/sdk/clusters"
	"github.com/wharfhub/wharf/sdk/fairqueue"
)

//go:embed crd.yaml
var crdYAML []byte

// Version is the provider's version in its manifest.
var Version = "v0.1.0"

// Options configure New. The zero value is production.
type Options struct {
	// Clock drives token expiry, rotation, heartbeats and the startup
	// grace; tests inject a fake one.
	Clock clock.WithTicker
	// Authorizer overrides the hub-backed authorizer (tests).
	Authorizer Authorizer
}

// Provider is the edges provider. Build it with New and hand it to
// sdk.Serve.
type Provider struct {
	clock clock.WithTicker
	opts  Options

	// Set by Start; the hub sends no request before Start returns.
	ctx     context.Context
	cancel  context.CancelFunc
	cfg     Config
	hubURL  string
	authz   Authorizer
	store   *store
	rd      *revdial.Server
	rdOpts  revdial.Options
	tunnels *registry
	metrics *metrics
	queue   workqueue.TypedRateLimitingInterface[string]
	// tenants learns workspace paths from the identity the hub asserts on
	// backend requests, for the status queue's turns.
	tenants fairqueue.Tenants
	egress  http.Handler
	// graceOver is set once the startup grace has passed.
	graceOver atomic.Bool
	// synced reports whether the Edge informer has its first list.
	synced func() bool
	done   chan struct{}
}

// New returns the edges provider.
func New(opts Options) *Provider {
	c := opts.Clock
	if c == nil {
		c = clock.RealClock{}
	}
	return &Provider{clock: c, opts: opts, tunnels: newRegistry()}
}

// Manifest describes the provider; see buildHandler for its routes.
func (p *Provider) Manifest() sdk.Manifest {
	return sdk.Manifest{
		Name:            protocol.ProviderName,
		DisplayName:     "Edges",
		Version:         Version,
		Category:        "connectivity",
		Description:     "Reach Kubernetes clusters and servers behind NAT through agents that dial out.",
		Replicas:        sdk.ReplicasSingle, // the tunnel registry lives in this process
		PublicPaths:     []string{protocol.PublicPrefix},
		EdgeProxyAccess: false,
		CRDs:            [][]byte{crdYAML},
		UI:              uiFiles(),
		Backend:         p.tenants.Middleware(p.buildHandler()),
	}
}

// Start reads the config and runs the Edge informer and status controller
// for the provider's life.
func (p *Provider) Start(_ context.Context, hc sdk.HubConfig) error {
	if hc.RestConfig == nil {
		return errors.New("edges: the hub gave no credentials")
	}
	var cfg Config
	if err := hc.DecodeConfig(&cfg); err != nil {
		return err
	}
	// client-go's default 5 requests/s would serialise joins and status
	// writes behind each other (1 join/s with a fleet reconnecting); the
	// hub has its own fairness limits for this identity.
	hc.RestConfig = rest.CopyConfig(hc.RestConfig)
	if hc.RestConfig.QPS == 0 {
		hc.RestConfig.QPS, hc.RestConfig.Burst = 200, 400
	}
	wild, err := clusters.Wildcard(hc.RestConfig)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(wild)
	if err != nil {
		return fmt.Errorf("edges client: %w", err)
	}
	authz := p.opts.Authorizer
	if authz == nil {
		if authz, err = newHubAuthorizer(hc); err != nil {
			return err
		}
	}
	return p.start(startParams{
		cfg:       cfg,
		hubURL:    hc.HubURL,
		authz:     authz,
		all:       dyn.Resource(v1alpha1.GVR),
		clientFor: hubClientFor(hc.RestConfig),
		hc:        hc,
	})
}

// startParams is what start needs; tests build it around a plain
// kube-apiserver.
type startParams struct {
	cfg       Config
	hubURL    string
	authz     Authorizer
	all       dynamic.ResourceInterface // list and watch across workspaces
	clientFor func(cluster string) (dynamic.ResourceInterface, error)
	hc        sdk.HubConfig
}

func (p *Provider) start(sp startParams) error {
	if err := sp.cfg.validate(); err != nil {
		return err
	}
	p.cfg = sp.cfg.withDefaults()
	p.hubURL = strings.TrimSuffix(sp.hubURL, "/")
	p.authz = sp.authz
	p.rdOpts = revdial.Options{KeepAliveInterval: p.cfg.KeepAliveInterval.Duration, ReadDeadline: p.cfg.ReadDeadline.Duration}
	p.rd = revdial.NewServer(protocol.BackendPrefix+protocol.PickupPrefix, p.rdOpts)
	p.metrics = newMetrics(p.rd.Stats)
	// Tenants take turns (sdk/fairqueue): one tenant's thousands of Edges
	// do not hold up another's status (issue 24, B-D). A key dropped
	// over the bound is added back with the rest of its tenant's edges.
	p.queue = fairqueue.New(fairqueue.Config[string]{Name: "edges-status", TenantOf: p.tenants.OfKey,
		Resync: func(tenant string) {
			for _, key := range p.store.keys() {
				if p.tenants.OfKey(key) == tenant {
					p.queue.Add(key)
				}
			}
		}})
	p.ctx, p.cancel = context.WithCancel(klog.NewContext(context.Background(), klog.Background().WithName("edges")))
	p.done = make(chan struct{})

	inf, err := p.newInformer(sp.all)
	if err != nil {
		p.cancel()
		close(p.done) // nothing runs; Stop must not wait for it
		return err
	}
	p.store = &store{clientFor: sp.clientFor, indexer: inf.Indexer()}
	p.synced = inf.HasSynced
	p.egress = p.newEgress(sp.hc)
	go func() {
		defer close(p.done)
		go inf.Run(p.ctx)
		if !cache.WaitForCacheSync(p.ctx.Done(), inf.HasSynced) {
			return
		}
		p.runStatus(p.ctx)
	}()
	return nil
}

// newInformer watches every Edge of every workspace that enabled edges.
func (p *Provider) newInformer(all dynamic.ResourceInterface) (*clusters.Informer, error) {
	enqueue := func(obj interface{}) {
		if key, err := clusters.Key(obj); err == nil {
			p.queue.Add(key)
		}
	}
	return clusters.NewInformer(clusters.InformerOptions{
		ListerWatcher: clusters.ListWatch(all),
		ObjectType:    &unstructured.Unstructured{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj interface{}) { enqueue(obj) },
			UpdateFunc: func(_, obj interface{}) { enqueue(obj) },
			DeleteFunc: func(obj interface{}) {
				key, err := clusters.Key(obj)
				if err != nil {
					return
				}
				// Deleting the Edge revokes its agent: the tunnel
				// closes now, and the credential dies with the object.
				if cluster, _, name, err := clusters.SplitKey(key); err == nil {
					p.forgetEdge(cluster, name)
				}
			},
		},
	})
}

// Stop ends the controller and closes every tunnel.
func (p *Provider) Stop(ctx context.Context) error {
	if p.cancel == nil {
		return nil
	}
	p.cancel()
	_ = p.rd.Close()
	select {
	case <-p.done:
	case <-ctx.Done():
	}
	return nil
}
