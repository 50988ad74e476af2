package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	apiextensionsoptions "k8s.io/apiextensions-apiserver/pkg/cmd/server/options"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/discovery/aggregated"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/clock"
	netutils "k8s.io/utils/net"

	"github.com/wharfhub/wharf/hub/aggregation"
	providersv1alpha1 "github.com/wharfhub/wharf/hub/apis/providers/v1alpha1"
	"github.com/wharfhub/wharf/hub/apis/scheme"
	tenancyv1alpha1 "github.com/wharfhub/wharf/hub/apis/tenancy/v1alpha1"
	"github.com/wharfhub/wharf/hub/authz/rbac"
	"github.com/wharfhub/wharf/hub/bootstrap"
	wetcd "github.com/wharfhub/wharf/hub/etcd"
	"github.com/wharfhub/wharf/hub/events"
	"github.com/wharfhub/wharf/hub/fairness"
	"github.com/wharfhub/wharf/hub/filters"
	"github.com/wharfhub/wharf/hub/h2guard"
	"github.com/wharfhub/wharf/hub/idleconns"
	"github.com/wharfhub/wharf/hub/login"
	"github.com/wharfhub/wharf/hub/namespaces"
	"github.com/wharfhub/wharf/hub/plugins"
	"github.com/wharfhub/wharf/hub/proxied"
	"github.com/wharfhub/wharf/hub/proxy"
	"github.com/wharfhub/wharf/hub/rapidreset"
	"github.com/wharfhub/wharf/hub/resourcequota"
	"github.com/wharfhub/wharf/hub/selectors"
	wstorage "github.com/wharfhub/wharf/hub/storage"
	"github.com/wharfhub/wharf/hub/storecap"
	"github.com/wharfhub/wharf/hub/tenantconns"
	"github.com/wharfhub/wharf/hub/workspaces"
	"github.com/wharfhub/wharf/portal"
	"github.com/wharfhub/wharf/sdk/plugin"
)

// servedGroupVersions are the hub's own API groups, in storage priority.
var servedGroupVersions = []schema.GroupVersion{
	corev1.SchemeGroupVersion, rbacv1.SchemeGroupVersion, coordinationv1.SchemeGroupVersion,
	authorizationv1.SchemeGroupVersion, authenticationv1.SchemeGroupVersion, tenancyv1alpha1.SchemeGroupVersion,
	providersv1alpha1.SchemeGroupVersion, eventsv1.SchemeGroupVersion, apiregv1.SchemeGroupVersion,
}

func newStorageConfig() *storagebackend.Config {
	return storagebackend.NewDefaultConfig("/registry", nil)
}

// Config is the hub's configuration before completion.
type Config struct {
	Generic       *genericapiserver.RecommendedConfig
	APIExtensions *apiextensionsapiserver.Config
	Extra         ExtraConfig
}

// ExtraConfig holds what the hub adds to a generic apiserver.
type ExtraConfig struct {
	Scheme      *runtime.Scheme
	Codecs      serializer.CodecFactory
	DataDir     string
	ExternalURL string
	EtcdPrefix  string
	EtcdClient  *clientv3.Client
	Embedded    *wetcd.Embedded
	Index       *workspaces.Index
	// Homes creates and finds the home workspaces of persons (home.go).
	Homes *homes
	// Admins are the hub-wide administrators.
	Admins admins
	// RBACQuota bounds each workspace's Roles and ClusterRoles; its RBAC
	// field is filled in once the authorizer exists.
	RBACQuota rbac.Quota
	// WorkspaceDeletionGracePeriod is --workspace-deletion-grace-period.
	WorkspaceDeletionGracePeriod time.Duration
	// RBAC is handed the per-workspace RBAC authorizer once it exists.
	RBAC *workspaceRBAC
	// Plugins runs and supervises the provider plugins.
	Plugins *plugins.Host
	// Replicas is this replica among its peers (replicas.go).
	Replicas *replicaSet
	// Serving serves the public listener (serving.go).
	Serving *publicServing
	// Shutdown and InFlight drive the drain on SIGTERM (drain.go).
	Shutdown ShutdownOptions
	InFlight *inFlight
	// NamespaceLifecycle is handed the Namespace storage once it exists.
	NamespaceLifecycle *namespaces.Lifecycle
	// ServiceAccounts issues and verifies service-account tokens.
	ServiceAccounts *serviceAccounts
	// ReplicaName names this hub replica (--replica-name): catalog status,
	// Lease holder, replica registry.
	ReplicaName string
	// EventTTL is the lease every stored event gets (--event-ttl).
	EventTTL time.Duration
	// Store keeps etcd below its quota (storecap.go).
	Store *storecap.Monitor
	// Events records the hub controllers' events into their workspaces
	// (events.go); set in New.
	Events *events.Broadcaster
	// Catalog holds provider credentials and enablement (catalog.go).
	Catalog *catalogState
	// APIView narrows discovery and OpenAPI to each workspace (apiview.go).
	APIView *apiViews
	// Aggregation routes workspaces' APIServices to providers
	// (apiservices.go).
	Aggregation *aggregationState
	// Quota counts and bounds what each workspace and tenant stores
	// (quota.go, hub/quota).
	Quota *storageQuota
	// ResourceQuota charges creates against workspaces' ResourceQuotas
	// (resourcequota.go, hub/resourcequota).
	ResourceQuota *resourcequota.Admission

	// Login is the browser login; LoginDeps what it uses of the union.
	Login     *login.Login
	LoginDeps login.Deps

	AdminToken     string
	KubeconfigPath string
	CAData         []byte
}

// Config builds the runtime configuration. It has side effects: it creates
// the data dir, certificates and credentials, and starts embedded etcd.
func (o *Options) Config(ctx context.Context) (*Config, error) {
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data dir: %w", err)
	}
	ext, err := url.Parse(o.ExternalURL)
	if err != nil {
		return nil, err
	}
	altDNS := []string{"localhost"}
	if ext.Hostname() != "" && net.ParseIP(ext.Hostname()) == nil {
		altDNS = append(altDNS, ext.Hostname())
	}
	altIPs := []net.IP{netutils.ParseIPSloppy("127.0.0.1"), netutils.ParseIPSloppy("::1")}
	if ip := net.ParseIP(ext.Hostname()); ip != nil {
		altIPs = append(altIPs, ip)
	}
	if err := writeECDSAServingCert(o.SecureServing.SecureServingOptions, "localhost", altDNS, altIPs); err != nil {
		return nil, err
	}
	if err := o.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", altDNS, altIPs); err != nil {
		return nil, fmt.Errorf("creating serving certificates: %w", err)
	}

	extra := ExtraConfig{DataDir: o.DataDir, ExternalURL: o.ExternalURL, EtcdPrefix: o.Etcd.StorageConfig.Prefix}
	// Read once: the admin kubeconfig, token login and the replica registry
	// all hand out this trust root.
	if extra.CAData, err = o.servingCA(); err != nil {
		return nil, err
	}
	extra.ReplicaName = o.Replica.Name
	extra.Shutdown = *o.Shutdown
	extra.InFlight = newInFlight(clock.RealClock{})
	extra.EventTTL = o.EventTTL
	extra.Catalog = newCatalogState()
	extra.APIView = newAPIViews(extra.Catalog)
	if len(o.Etcd.StorageConfig.Transport.ServerList) == 0 {
		e, err := wetcd.StartEmbeddedWithQuota(ctx, filepath.Join(o.DataDir, "etcd"), o.Store.EmbeddedQuota())
		if err != nil {
			return nil, err
		}
		extra.Embedded = e
		o.Etcd.StorageConfig.Transport.ServerList = []string{e.ClientURL}
	}
	if extra.EtcdClient, err = newEtcdClient(o.Etcd.StorageConfig.Transport); err != nil {
		return nil, err
	}
	extra.Index = workspaces.NewIndex(extra.EtcdClient, extra.EtcdPrefix)
	// The store never fills: quota, high-water mark, compaction,
	// defragmentation and alarm recovery (storecap.go, hub/storecap).
	extra.Store = o.newStoreMonitor(ctx, &extra)
	// Byte ceilings no flag set follow the store's quota, so one tenant
	// cannot take a small store to its mark (hub/quota FitToStore).
	o.Quota.FitToStore(extra.Store.Quota())
	extra.Quota = newStorageQuota(o.Quota, &extra)
	extra.ResourceQuota = newResourceQuotaAdmission(&extra)

	extra.Scheme = scheme.New()
	extra.Codecs = scheme.NewCodecs(extra.Scheme)
	o.Etcd.StorageConfig.Codec = extra.Codecs.LegacyCodec(servedGroupVersions...)

	gc := genericapiserver.NewRecommendedConfig(extra.Codecs)
	gc.FeatureGate = utilfeature.DefaultFeatureGate
	gc.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	namer := openapinamer.NewDefinitionNamer(extra.Scheme, apiextensionsapiserver.Scheme)
	gc.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(openAPIDefinitions, namer)
	gc.OpenAPIConfig.Info.Title = "Wharf"
	gc.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(openAPIDefinitions, namer)
	gc.OpenAPIV3Config.Info.Title = "Wharf"
	gc.ExternalAddress = ext.Host
	// One discovery manager shared with apiextensions, so CRD groups show up
	// in the aggregated discovery the outermost server answers.
	gc.AggregatedDiscoveryGroupManager = aggregated.NewResourceManager("apis")
	// Upstream admission plugins look objects up without a workspace; the
	// hub runs cluster-aware replacements only. apiextensions shares this
	// chain, so custom resources are checked too.
	extra.NamespaceLifecycle = namespaces.NewLifecycle()
	// APIService writes: who may make one route where (hub/aggregation).
	gc.AdmissionControl = admission.NewChainHandler(extra.NamespaceLifecycle, wstorage.NewDryRunStamp(globalResources()),
		aggregation.NewAdmission(extra.Catalog.Enabled), extra.Quota.admission, extra.Quota.events,
		o.historyAdmission(&extra), o.storeAdmission(extra.Store), extra.ResourceQuota, extra.Quota.accountant.WriteAdmission())

	if err := applySecureServing(o.SecureServing, &gc.SecureServing, &gc.LoopbackClientConfig); err != nil {
		return nil, err
	}
	// Idle connections must not use up the descriptors etcd and the
	// plugins need (third review, C-A: the hub exited).
	var resets *rapidreset.Budgets
	var idle *idleconns.Tracker
	var tenantConns *tenantconns.Tracker
	var own *fairness.OwnDials
	if gc.SecureServing != nil && gc.SecureServing.Listener != nil {
		lim := o.Fairness.ListenerLimits(fairness.OpenFileLimit())
		if gc.LoopbackClientConfig != nil {
			// The loopback client's own connections are never metered
			// (hub/fairness own.go).
			lim.Own = fairness.NewOwnDials()
			gc.LoopbackClientConfig.Dial = lim.Own.DialContext
		}
		own = lim.Own
		// Behind a TCP proxy that names its clients, every bound below
		// sees the client, not the proxy (tenth review H18, hub/proxied).
		nets, err := o.Proxied.Nets()
		if err != nil {
			return nil, err
		}
		gc.SecureServing.Listener = proxied.Listener(gc.SecureServing.Listener, nets, o.Proxied.HeaderTimeout, lim.Own.Has)
		gc.SecureServing.Listener = fairness.LimitConnections(gc.SecureServing.Listener, lim, clock.RealClock{})
		// HTTP/2 rapid reset: a connection that cancels too many streams
		// before their answer is closed (fifth review #20-#23,
		// hub/rapidreset); the loopback client's are never.
		resets = rapidreset.New(*o.Resets, lim.Own.Has, clock.RealClock{})
		gc.SecureServing.Listener = resets.Listener(gc.SecureServing.Listener)
		// A connection that begins no request in time is closed, and
		// past a bound the oldest such (sixth review #4, hub/idleconns);
		// the loopback client's are never.
		idle = idleconns.New(*o.IdleConns, lim.Own.Has, clock.RealClock{})
		gc.SecureServing.Listener = idle.Listener(gc.SecureServing.Listener)
		// A tenant's connections are bounded, from whatever addresses
		// (seventh review #4, hub/tenantconns).
		tenantConns = tenantconns.New(o.Fairness.TenantConnections(fairness.OpenFileLimit()), lim.Own.Has, clock.RealClock{})
		gc.SecureServing.Listener = tenantConns.Listener(gc.SecureServing.Listener)
		// The hub serves this listener itself, so that each decrypted
		// HTTP/2 connection can pass through a hook before Go's HTTP/2
		// server reads it (serving.go, hub/serving). The hook bounds the
		// header blocks and control frames each connection makes that
		// server decode and answer, below every handler (sixth review
		// #1-#3, W2; hub/h2guard); the loopback client's are never.
		guard := h2guard.New(*o.H2Guard, lim.Own.Has, clock.RealClock{})
		wrapHTTP2 := func(c *tls.Conn) net.Conn { return guard.Wrap(c) }
		extra.Serving = handOff(gc.SecureServing, wrapHTTP2)
	}
	resourceConfig := serverstorage.NewResourceConfig()
	resourceConfig.EnableVersions(servedGroupVersions...)
	gc.MergedResourceConfig = resourceConfig

	apiextCfg, err := o.apiextensionsConfig(gc)
	if err != nil {
		return nil, err
	}
	if err := o.Etcd.ApplyTo(&gc.Config); err != nil {
		return nil, fmt.Errorf("applying etcd options: %w", err)
	}
	// One etcd member down or a short leader election must not take the
	// replica out of its load balancer (etcdready.go).
	tolerateEtcdBlips(gc.Config.ReadyzChecks, clock.RealClock{})
	// RetryWrites: losing one etcd member or its leader must cost clients
	// no error (hub/storage raw.go, hub/etcd retry.go). The hub then
	// builds each store itself, with a watch cache where upstream would.
	watchCache, err := wstorage.WatchCacheOf(o.Etcd)
	if err != nil {
		return nil, err
	}
	watchCache.History = o.watchCacheHistory()
	// Big objects' stored sizes, learned as they are written and read,
	// weigh the requests that name them (hub/objsize).
	sizes := objectSizes(extra.Index, func() authorizer.Authorizer { return gc.Authorization.Authorizer })
	gc.RESTOptionsGetter = wstorage.RESTOptionsGetter{Delegate: gc.RESTOptionsGetter, RetryWrites: true, WatchCache: watchCache, Wrap: extra.Quota.accountant.Wrap, Sizes: sizes}
	// Custom resources are counted too (hub/quota).
	if crGetter, ok := apiextCfg.ExtraConfig.CRDRESTOptionsGetter.(wstorage.RESTOptionsGetter); ok {
		crGetter.Wrap = extra.Quota.accountant.Wrap
		crGetter.Sizes = sizes
		apiextCfg.ExtraConfig.CRDRESTOptionsGetter = crGetter
	}

	if extra.AdminToken, err = bootstrap.LoadOrCreateToken(filepath.Join(o.DataDir, "admin-token")); err != nil {
		return nil, err
	}
	if extra.ServiceAccounts, err = newServiceAccounts(ctx, o.ServiceAccounts, &extra); err != nil {
		return nil, err
	}
	if gc.Authentication.Authenticator, err = o.newLoginAuthenticator(ctx, &extra); err != nil {
		return nil, err
	}
	extra.Admins = admins{users: sets.New(o.AdminUsers...), groups: sets.New(o.AdminGroups...)}
	extra.Quota.setAdmins(extra.Admins)
	extra.RBACQuota = rbac.Quota{
		MaxRules: o.MaxWorkspaceRBACRules, MaxAggregated: o.MaxWorkspaceAggregatedClusterRoles,
		ExemptUsers: sets.List(extra.Admins.users), ExemptGroups: sets.List(extra.Admins.groups),
	}
	extra.WorkspaceDeletionGracePeriod = o.WorkspaceDeletionGracePeriod
	extra.RBAC = &workspaceRBAC{resolver: extra.Index}
	if gc.Authorization.Authorizer, gc.RuleResolver, err = newAuthorizer(extra.Admins, extra.RBAC, authorizer.AuthorizerFunc(extra.Catalog.authorizer(extra.RBAC).Authorize)); err != nil {
		return nil, err
	}
	extra.Homes = withHomes(gc, &extra)
	genericapiserver.AuthorizeClientBearerToken(gc.LoopbackClientConfig, &gc.Authentication, &gc.Authorization)
	// Around every authenticator (only the failure throttle's charging
	// wraps it), so that every caller's impersonation, the loopback
	// client's included, is confined to the request's workspace.
	gc.Authentication.Authenticator = withImpersonationConfinement(gc.Authentication.Authenticator, extra.RBAC.withCluster)
	throttle, err := o.authnThrottle(gc, extra.AdminToken)
	if err != nil {
		return nil, err
	}
	trusted, err := o.Login.TrustedProxies()
	if err != nil {
		return nil, err
	}
	// The hub's own address has anonymous bounds of its own; only the
	// loopback client's dials are outside (sixth review #6).
	anonymous := fairness.NewAnonymous(o.Fairness.AnonymousRequestsPerSecond, o.Fairness.AnonymousRequestsInFlight, trusted, login.SessionCookie, clock.RealClock{}).
		WithOwnDials(own.Has)
	extra.ServiceAccounts.throttle = throttle.WithSessionCheck(extra.Login.Sessions().Authentic)
	// Opaque tokens are verified by the throttle itself while only the
	// hub-wide failure budget is used up (hub/authn, B-F).
	throttle.WithCheapTokens(cheapTokens(&extra))
	if extra.Replicas, err = o.newReplicaSet(ctx, &extra, gc.LoopbackClientConfig); err != nil {
		return nil, err
	}
	if extra.Plugins, err = o.newPluginHost(extra.Replicas, extra.Catalog.restConfig(o.Replica.InternalURL, o.SecureServing.ServerCert.CertKey.CertFile)); err != nil {
		return nil, err
	}
	targets := extra.Replicas.targets(providerTargets(extra.Plugins), extra.Plugins)
	backend := proxy.NewBackend(targets, workspaceIdentity{index: extra.Index, authz: gc.Authorization.Authorizer, homes: extra.Homes}).WithHop(extra.Replicas.asserter)
	// A credential a provider refuses on its public paths (an edge
	// agent's join token) is a failed authentication of its caller's
	// address (sixth review #6, hub/authn).
	backend.WithRefusals(throttle.Refused)
	// A provider-route request waiting on its provider holds no CPU turn
	// (hub/fairness, busy.go).
	backend.WithTransport(fairness.AsideTransport)
	// The shell page carries the CSRF token on a signed-in browser's
	// top-level navigations only (see portal/doc.go).
	portalSrv := portal.Must(portal.Options{CSRF: extra.Login.DocumentCSRF})
	ui := proxy.NewUI(targets, portalSrv.Shell())
	extra.Aggregation = &aggregationState{backend: backend, providers: targets}
	// Upstream's max-in-flight filter keeps one budget for everybody, so
	// one tenant's slow requests could use it up (attack review B10); the
	// hub's own filter bounds each tenant's share and replaces it.
	gc.MaxRequestsInFlight, gc.MaxMutatingRequestsInFlight = 0, 0
	// Prepare: a workspace not in memory is read before seats are taken.
	keyer := fairness.Keyer{IsAdmin: extra.Admins.has, PathOf: extra.Index.PathOf, Prepare: func(ctx context.Context) { extra.RBAC.withCluster(ctx) }}
	// Upstream's priority-and-fairness filter, between impersonation and
	// authorization, runs the hub's tenant flow control (hub/fairness).
	costs := fairness.NewEstimator(fairness.EstimatorEntries)
	flow, err := o.Fairness.NewController(keyer, costs, sizes)
	if err != nil {
		return nil, err
	}
	gc.FlowControl = flow
	// The provider routes' seats are their own; their refusals are held
	// with the API's (hub/fairness).
	providerFairness, err := o.Fairness.NewProviderFilter(keyer, flow)
	if err != nil {
		return nil, err
	}
	gc.BuildHandlerChainFunc = func(apiHandler http.Handler, c *genericapiserver.Config) http.Handler {
		// Listed from the innermost filter out; a request passes them in
		// the reverse order.
		//
		// GET /api/whoami, behind authentication and authorization.
		apiHandler = withWhoAmI(apiHandler, &extra, c.Authorization.Authorizer)
		// GET /clusters/<ws>/api/usage: stored usage against the
		// ceilings, for whoever may get that path and list resourcequotas
		// there; and each write's one measure (hub/quota).
		apiHandler = extra.Quota.accountant.WithUsage(apiHandler, c.Serializer, c.Authorization.Authorizer)
		// A workspace's APIServices route their group versions to
		// providers, after authentication, impersonation, authorization
		// and workspace resolution (all outside), as kube-aggregator sits
		// inside kube-apiserver's chain; in that workspace they win over
		// a hub-wide CRD of the same group version (hub/aggregation).
		apiHandler = extra.Aggregation.wrap(apiHandler, c.Serializer)
		// A provider's API answers 404 in workspaces that have not enabled
		// it (hub/enablement); it needs the resolved cluster.
		h := extra.Catalog.withEnablement(apiHandler, c.Serializer, extra.Admins)
		// Discovery and OpenAPI show a workspace what it serves: a
		// provider's groups only where it is enabled (hub/apiview).
		h = extra.APIView.wrap(h)
		// Complete workspace resolution once the caller is authenticated
		// and authorized (see package filters).
		h = filters.WithClusterResolution(h, extra.Index, mayUseWildcard(extra.Admins), c.Serializer)
		// Each tenant's share of the budgets is taken by c.FlowControl,
		// once the caller is authenticated and impersonated, before
		// authorization and before any handler reads the body; here the
		// size of each list is learned for its next estimate (hub/fairness).
		h = costs.WithCost(h)
		// A selector over its bounds (taken out of the query by
		// WithLimit below) is answered 400 once the caller is
		// authenticated, counted and authorized (hub/selectors).
		h = selectors.WithRefusal(h, c.Serializer)
		// Upgrades on the API are long-running, which upstream's filter
		// serves without the Controller: their tenant is named here, for
		// their connections to be charged to its traffic budget
		// (hub/fairness, upgrade.go).
		h = flow.WithUpgrades(h)
		h = genericapiserver.DefaultBuildHandlerChain(h, c)
		// A request cancelled on its way here goes no further
		// (hub/rapidreset).
		h = rapidreset.SkipCancelled(h)
		// Per-request state for the flow control, and its 429 as a Status.
		h = fairness.WithState(h, c.Serializer)
		// A selector over its bounds is taken out of the query before
		// upstream's request-info filter parses it (hub/selectors).
		h = o.Selectors.WithLimit(h)
		// Strip /clusters/<target> before request info is parsed, so
		// upstream filters see ordinary API paths.
		h = filters.WithClusterPath(h, extra.Index, c.Serializer)
		// Provider routes bypass the API chain: its request timeout would
		// cut SSE and websockets, RBAC has no rules for them, and public
		// paths (agent tunnels) carry no credentials. The backend proxy
		// authenticates and checks workspace access itself (hub/proxy).
		// The provider routes have no budget of their own upstream; each
		// tenant's authenticated requests there are bounded, queued and
		// refused the same way, with seats of their own so streams never
		// use up the API's.
		backend.WithLimit(func(next http.Handler) http.Handler { return providerFairness.WithProviderLimit(next, c.Serializer) })
		h = proxy.WithProviderRoutes(h, backend, ui, c.Authentication.Authenticator, c.Authentication.APIAudiences)
		// The portal's pages and files need no authentication: the shell
		// signs in from the page itself (package portal).
		h = portalSrv.WithPortal(h, proxy.UIPrefix)
		// Before any authentication, API and provider routes alike: an
		// address over its failure budget gets 429 for credentials not
		// known good, which are then never evaluated (hub/authn).
		h = throttle.WithThrottle(h, c.Serializer)
		// Outermost: login endpoints, session refresh and the CSRF check,
		// which must cover the API and the provider routes alike
		// (hub/login).
		h = withLogin(h, &extra)
		// Requests without any credential are bounded per address prefix
		// and hub-wide (third review C-E, hub/fairness).
		h = anonymous.WithAnonymousLimit(h, c.Serializer)
		// What is in flight when the hub drains, streams on the provider
		// routes included (drain.go).
		h = extra.InFlight.wrap(h)
		// Outside everything but the idle marker, before any credential
		// is looked at: HTTP/2 streams cancelled before their answer are
		// charged to their connection, which is closed past its budget
		// (hub/rapidreset).
		h = resets.Filter(h)
		// Each request counted on its connection, for the tenant its
		// connection is (hub/tenantconns; the flow control names it).
		h = tenantConns.Filter(h)
		// Outermost: a request's connection has begun one, and is no
		// longer closed for idling (hub/idleconns).
		return idle.Filter(h)
	}
	o.Shutdown.applyTo(&gc.Config)
	// apiextensions shares authn, authz and the handler chain settings.
	apiextCfg.GenericConfig.Authentication = gc.Authentication
	apiextCfg.GenericConfig.Authorization = gc.Authorization

	if err := o.writeKubeconfig(&extra); err != nil {
		return nil, err
	}
	return &Config{Generic: gc, APIExtensions: apiextCfg, Extra: extra}, nil
}

// apiextensionsConfig derives the CRD server's config from the hub's, as
// kube-apiserver does, with both of its RESTOptionsGetters decorated:
// CRDs are hub-wide, their instances per workspace.
func (o *Options) apiextensionsConfig(gc *genericapiserver.RecommendedConfig) (*apiextensionsapiserver.Config, error) {
	generic := *gc
	generic.PostStartHooks = map[string]genericapiserver.PostStartHookConfigEntry{}
	generic.RESTOptionsGetter = nil
	etcd := *o.Etcd
	etcd.StorageConfig.Codec = apiextensionsapiserver.Codecs.LegacyCodec(apiextensionsv1beta1.SchemeGroupVersion, apiextensionsv1.SchemeGroupVersion)
	etcd.StorageConfig.EncodeVersioner = runtime.NewMultiGroupVersioner(apiextensionsv1beta1.SchemeGroupVersion, schema.GroupKind{Group: apiextensionsv1beta1.GroupName})
	etcd.SkipHealthEndpoints = true
	if err := etcd.ApplyTo(&generic.Config); err != nil {
		return nil, fmt.Errorf("applying etcd options to apiextensions: %w", err)
	}
	// The CRD getter decides the watch cache by the same options (upstream
	// NewCRDRESTOptionsGetter builds on o.Etcd, sizes included).
	watchCache, err := wstorage.WatchCacheOf(o.Etcd)
	if err != nil {
		return nil, err
	}
	watchCache.History = o.watchCacheHistory()
	generic.RESTOptionsGetter = wstorage.RESTOptionsGetter{
		Delegate:    generic.RESTOptionsGetter,
		Global:      globalResources(),
		RetryWrites: true,
		WatchCache:  watchCache,
	}
	rc := serverstorage.NewResourceConfig()
	rc.EnableVersions(apiextensionsv1.SchemeGroupVersion)
	generic.MergedResourceConfig = rc
	crdGetter := apiextensionsoptions.NewCRDRESTOptionsGetter(etcd, generic.ResourceTransformers, generic.StorageObjectCountTracker)
	return &apiextensionsapiserver.Config{
		GenericConfig: &generic,
		ExtraConfig: apiextensionsapiserver.ExtraConfig{
			CRDRESTOptionsGetter: wstorage.RESTOptionsGetter{Delegate: crdGetter, RetryWrites: true, WatchCache: watchCache},
			MasterCount:          1,
		},
	}, nil
}

// servingCA returns the root of the serving certificate's chain: what a
// client of this hub must trust.
func (o *Options) servingCA() ([]byte, error) {
	chain, err := os.ReadFile(o.SecureServing.ServerCert.CertKey.CertFile)
	if err != nil {
		return nil, fmt.Errorf("reading serving certificate: %w", err)
	}
	return bootstrap.RootCA(chain)
}

func (o *Options) writeKubeconfig(extra *ExtraConfig) error {
	extra.KubeconfigPath = filepath.Join(o.DataDir, "admin.kubeconfig")
	return bootstrap.WriteKubeconfig(extra.KubeconfigPath, bootstrap.Kubeconfig{
		Server: o.ExternalURL + "/clusters/root", CAData: extra.CAData, Token: extra.AdminToken,
	})
}

func newEtcdClient(t storagebackend.TransportConfig) (*clientv3.Client, error) {
	var tlsCfg *tls.Config
	if t.CertFile != "" || t.KeyFile != "" || t.TrustedCAFile != "" {
		info := transport.TLSInfo{CertFile: t.CertFile, KeyFile: t.KeyFile, TrustedCAFile: t.TrustedCAFile}
		var err error
		if tlsCfg, err = info.ClientConfig(); err != nil {
			return nil, fmt.Errorf("etcd client TLS: %w", err)
		}
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: t.ServerList, TLS: tlsCfg, DialTimeout: 20 * time.Second, Logger: nil})
	if err != nil {
		return nil, fmt.Errorf("connecting to etcd: %w", err)
	}
	klog.V(2).InfoS("Connected to etcd", "endpoints", t.ServerList)
	return c, nil
}

// newPluginHost prepares (but does not start) the provider plugins.
func (o *Options) newPluginHost(rs *replicaSet, restConfig func(context.Context, *plugin.Descriptor) (plugin.RestConfig, error)) (*plugins.Host, error) {
	specs, err := o.Plugins.Specs()
	if err != nil {
		return nil, err
	}
	cfgs, err := o.Plugins.ProviderConfigs()
	if err != nil {
		return nil, err
	}
	// Each provider gets its own identity, scoped to the workspaces that
	// enable it (catalog.go, hub/providerauth).
	return plugins.New(plugins.Config{
		DataDir: o.DataDir, HubURL: o.ExternalURL, Specs: specs, ProviderConfigs: cfgs, Supervision: o.Plugins.Supervision,
		RestConfig: restConfig, Replica: rs.name, Gate: rs.gate,
	})
}

// globalResources are stored hub-wide (cluster.Global) rather than per
// workspace: the storage decorator and the dry-run stamp agree on them.
func globalResources() map[schema.GroupResource]bool {
	return map[schema.GroupResource]bool{apiextensionsv1.Resource("customresourcedefinitions"): true}
}
