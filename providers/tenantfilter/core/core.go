package core

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// Core is the filtering core: an http.Handler for requests already
// authenticated by a front end (a Caller in the context) whose path is
// relative to the downstream root.
type Core struct {
	opts    Options
	cache   Cache
	tenancy Tenancy

	kc      *informerCache
	tn      *tenancy
	disco   *liveDiscovery
	changed *notifier
	fwd     *forwarder
	info    *request.RequestInfoFactory
	groupRe *regexp.Regexp
	clock   clock.Clock
}

// New builds a Core for the downstream cfg points at; cfg is the provider's
// own credential. Informers run until ctx ends. It does not wait for the
// caches: see WaitForSync and Ready.
func New(ctx context.Context, cfg *rest.Config, opts Options) (*Core, error) {
	opts = withDefaults(opts)
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = opts.ClientQPS, opts.ClientBurst

	var groupRe *regexp.Regexp
	if opts.ImpersonationGroupRegexp != "" {
		re, err := regexp.Compile(opts.ImpersonationGroupRegexp)
		if err != nil {
			return nil, fmt.Errorf("--impersonation-group-regexp: %w", err)
		}
		groupRe = re
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	dcfg := rest.CopyConfig(cfg)
	dcfg.Timeout = discoveryTimeout
	dc, err := discovery.NewDiscoveryClientForConfig(dcfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	fwd, err := newForwarder(cfg)
	if err != nil {
		return nil, err
	}
	clk := clock.RealClock{}
	changed := newNotifier()
	disco := newLiveDiscovery(dc, clk)
	kc := newInformerCache(ctx, dyn, disco, opts.DisableCaching)
	tn := newTenancy(opts, kc, changed)
	c := &Core{
		opts: opts, cache: kc, tenancy: tn,
		kc: kc, tn: tn, disco: disco, changed: changed, fwd: fwd,
		info: &request.RequestInfoFactory{
			APIPrefixes:          sets.NewString("api", "apis"),
			GrouplessAPIPrefixes: sets.NewString("api"),
		},
		groupRe: groupRe,
		clock:   clk,
	}
	c.fwd.core = c
	if opts.EnableReflector {
		c.configureReflector()
	}
	// Discovery failing here (downstream not up yet) is not fatal: lookups
	// retry, and Ready stays false until the caches sync.
	_ = disco.refresh()
	kc.informer(namespacesGVR)
	tn.ensureStarted()
	if opts.EnableReflector {
		c.startReflector()
	}
	return c, nil
}

func withDefaults(o Options) Options {
	if o.CapsuleConfigurationName == "" {
		o.CapsuleConfigurationName = "default"
	}
	if o.AllowedPaths == nil {
		o.AllowedPaths = []string{"/api", "/apis", "/version"}
	}
	if o.ClientQPS == 0 {
		o.ClientQPS = 20
	}
	if o.ClientBurst == 0 {
		o.ClientBurst = 30
	}
	return o
}

// WaitForSync waits (bounded by ctx) until the core's informers have
// synced; it reports whether they did.
func (c *Core) WaitForSync(ctx context.Context) bool {
	if !c.tn.waitForSync(ctx) {
		return false
	}
	if c.opts.EnableReflector {
		return c.waitReflector(ctx)
	}
	return true
}

// Ready reports whether the caches have synced (a readiness probe).
func (c *Core) Ready() bool {
	if !c.kc.synced(namespacesGVR) {
		return false
	}
	for _, gvr := range c.coreGVRs() {
		if inf, ok := c.kc.started(gvr); ok && !inf.HasSynced() {
			return false
		}
	}
	return true
}

// ServeHTTP filters one request for the Caller in its context.
func (c *Core) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	caller, ok := CallerFrom(r.Context())
	if !ok || caller.User == "" {
		writeStatus(w, r, errUnauthorized())
		return
	}
	c.route(w, r, caller)
}

// downstreamURL is the downstream's root URL.
func (f *forwarder) downstreamURL(path, rawQuery string) *url.URL {
	u := *f.base
	u.Path = singleJoin(f.base.Path, path)
	u.RawPath = ""
	u.RawQuery = rawQuery
	return &u
}

func metaAccessor(obj any) (metav1.Object, error) { return meta.Accessor(obj) }

// notifier wakes waiters (namespace watches) whenever something that
// decides visibility changes.
type notifier struct {
	mu sync.Mutex // guards ch
	ch chan struct{}
}

func newNotifier() *notifier { return &notifier{ch: make(chan struct{})} }

// wait returns a channel closed at the next change.
func (n *notifier) wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ch
}

func (n *notifier) notify() {
	n.mu.Lock()
	defer n.mu.Unlock()
	close(n.ch)
	n.ch = make(chan struct{})
}

func (n *notifier) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { n.notify() },
		UpdateFunc: func(any, any) { n.notify() },
		DeleteFunc: func(any) { n.notify() },
	}
}

// Cache is the core's informer cache, for the front ends and the grants
// engine (an additive accessor to the contract: readiness probes and tests
// need to see what discovery found).
func (c *Core) Cache() Cache { return c.cache }
