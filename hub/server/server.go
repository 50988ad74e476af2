package server

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/klog/v2"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	providersv1alpha1 "github.com/wharfhub/wharf/hub/apis/providers/v1alpha1"
	tenancyv1alpha1 "github.com/wharfhub/wharf/hub/apis/tenancy/v1alpha1"
	"github.com/wharfhub/wharf/hub/authz/rbac"
	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/controller"
	"github.com/wharfhub/wharf/hub/crdcleanup"
	"github.com/wharfhub/wharf/hub/gc"
	"github.com/wharfhub/wharf/hub/namespaces"
	"github.com/wharfhub/wharf/hub/policy"
	"github.com/wharfhub/wharf/hub/quota"
	"github.com/wharfhub/wharf/hub/registry"
	"github.com/wharfhub/wharf/hub/registry/reviews"
	wstorage "github.com/wharfhub/wharf/hub/storage"
	"github.com/wharfhub/wharf/hub/workspaces"
)

// completedConfig is private so that New can only be reached through
// Complete.
type completedConfig struct {
	generic       genericapiserver.CompletedConfig
	apiextensions *Config
	extra         *ExtraConfig
}

// CompletedConfig is a Config after Complete.
type CompletedConfig struct{ *completedConfig }

// Complete fills in the generic server's derived fields.
func (c *Config) Complete() CompletedConfig {
	return CompletedConfig{&completedConfig{generic: c.Generic.Complete(), apiextensions: c, extra: &c.Extra}}
}

// Hub is a constructed, not yet running, hub.
type Hub struct {
	Generic    *genericapiserver.GenericAPIServer
	Extra      *ExtraConfig
	rootID     cluster.ID
	namespaces rest.Creater
	policy     policy.Stores
}

// initializeWorkspace gives a new logical cluster its namespaces and
// bootstrap RBAC, with the creator as admin.
func (h *Hub) initializeWorkspace(ctx context.Context, id cluster.ID, creator user.Info) error {
	// The hub's own objects: counted, never refused (hub/quota).
	ctx = quota.WithExempt(ctx)
	if err := namespaces.CreateImmortal(cluster.WithCluster(ctx, id), h.namespaces); err != nil {
		return err
	}
	return policy.Ensure(ctx, h.policy, id, creator)
}

// New builds the server chain: the hub's own groups in front, with the CRD
// server as its delegate for everything else under /apis.
func (c CompletedConfig) New(ctx context.Context) (*Hub, error) {
	apiext := c.apiextensions.APIExtensions.Complete()
	// apiextensions' Complete turns discovery off because upstream the
	// aggregator serves it; here nothing else would.
	apiext.GenericConfig.EnableDiscovery = true
	crdServer, err := apiext.New(genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, fmt.Errorf("creating CRD server: %w", err)
	}
	s, err := c.generic.New("wharf-hub", crdServer.GenericAPIServer)
	if err != nil {
		return nil, fmt.Errorf("creating hub server: %w", err)
	}
	x := c.extra
	x.Shutdown.applyToServer(s)
	rootID, err := x.Index.EnsureRoot(ctx)
	if err != nil {
		return nil, err
	}
	h := &Hub{Generic: s, Extra: x, rootID: rootID}

	optsGetter := c.generic.RESTOptionsGetter
	builtin, err := registry.NewBuiltinStorage(x.Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	if err := h.installEvents(s, builtin, optsGetter); err != nil {
		return nil, err
	}
	nsStore := builtin[corev1.SchemeGroupVersion]["namespaces"].(*registry.NamespaceStorage).Store()
	h.namespaces = nsStore
	x.NamespaceLifecycle.SetNamespaces(nsStore)
	nsController, err := namespaces.NewController(nsStore, builtin[corev1.SchemeGroupVersion]["namespaces"].(*registry.NamespaceStorage).Finalize(), x.EtcdClient, x.EtcdPrefix, clusterTenants(x.Index))
	if err != nil {
		return nil, err
	}
	nsController.Events = x.Events.Recorder("namespace-controller")
	rbacGV := rbacv1.SchemeGroupVersion
	rbacAuthz, err := rbac.New(rbac.Sources{
		Roles:               rbac.StorageListWatch(builtin[rbacGV]["roles"].(*registry.Store)),
		RoleBindings:        rbac.StorageListWatch(builtin[rbacGV]["rolebindings"].(*registry.Store)),
		ClusterRoles:        rbac.StorageListWatch(builtin[rbacGV]["clusterroles"].(*registry.Store)),
		ClusterRoleBindings: rbac.StorageListWatch(builtin[rbacGV]["clusterrolebindings"].(*registry.Store)),
	})
	if err != nil {
		return nil, err
	}
	x.RBAC.rbac.Store(rbacAuthz)
	checker := rbac.EscalationChecker{RBAC: rbacAuthz, Authorizer: authorizerOf(s), PrivilegedGroups: sets.List(x.Admins.groups)}
	quota := x.RBACQuota
	quota.RBAC = rbacAuthz
	for _, res := range []string{"roles", "rolebindings", "clusterroles", "clusterrolebindings"} {
		builtin[rbacGV][res] = registry.Guard(builtin[rbacGV][res].(*registry.Store), checker, quota)
	}
	// Aggregated rules are written back as upstream's controller does,
	// within one quota's worth of rules per workspace (aggregation.go).
	rbacAuthz.EnableWriteBack(aggregatedRulesWriter(builtin[rbacGV]["clusterroles"].(rest.Updater), sets.List(x.Admins.groups)), quota.MaxRules, clusterTenants(x.Index))
	h.policy = policy.Stores{
		ClusterRoles:        builtin[rbacGV]["clusterroles"].(rest.Creater),
		ClusterRoleBindings: builtin[rbacGV]["clusterrolebindings"].(rest.Creater),
	}
	wsREST, wsStatus, err := workspaces.NewREST(x.Scheme, optsGetter, x.Index, x.ExternalURL, h.initializeWorkspace)
	if err != nil {
		return nil, err
	}
	builtin[tenancyv1alpha1.SchemeGroupVersion] = map[string]rest.Storage{"workspaces": wsREST, "workspaces/status": wsStatus}
	builtin[authorizationv1.SchemeGroupVersion] = map[string]rest.Storage{
		"selfsubjectaccessreviews":  reviews.NewSelfSubjectAccessReview(s.Authorizer),
		"localsubjectaccessreviews": reviews.NewLocalSubjectAccessReview(s.Authorizer),
		"subjectaccessreviews":      reviews.NewSubjectAccessReview(s.Authorizer),
		"selfsubjectrulesreviews":   reviews.NewSelfSubjectRulesReview(c.generic.RuleResolver),
	}
	builtin[authenticationv1.SchemeGroupVersion] = map[string]rest.Storage{"selfsubjectreviews": reviews.WhoAmIREST{}}
	if err := x.ServiceAccounts.install(builtin, authorizerOf(s)); err != nil {
		return nil, err
	}
	if err := x.ServiceAccounts.installDiscovery(s, x.ExternalURL); err != nil {
		return nil, err
	}
	catalogBG, err := h.installCatalog(builtin, optsGetter)
	if err != nil {
		return nil, err
	}
	apiServicesBG, err := h.installAPIServices(builtin, optsGetter)
	if err != nil {
		return nil, err
	}

	// Home workspaces get the Workspace storage, and SelfSubjectReview
	// reports the caller's home (home.go).
	if err := h.bindHomes(wsREST, builtin); err != nil {
		return nil, err
	}
	paramCodec := metav1.ParameterCodec
	for _, gv := range servedGroupVersions {
		info := genericapiserver.NewDefaultAPIGroupInfo(gv.Group, x.Scheme, paramCodec, x.Codecs)
		info.VersionedResourcesStorageMap[gv.Version] = builtin[gv]
		if gv.Group == "" {
			err = s.InstallLegacyAPIGroup(genericapiserver.DefaultLegacyAPIPrefix, &info)
		} else {
			err = s.InstallAPIGroup(&info)
		}
		if err != nil {
			return nil, fmt.Errorf("installing %s: %w", gv, err)
		}
	}

	collector, err := newCollector(builtin, clusterTenants(x.Index))
	if err != nil {
		return nil, err
	}
	// Custom resources are reached through the API (their storage lives in
	// the apiextensions handler), one monitor per CRD.
	if err := collector.WatchCustomResources(s.LoopbackClientConfig); err != nil {
		return nil, err
	}
	wsController, err := workspaces.NewController(wsREST, x.Index, x.EtcdClient, x.EtcdPrefix, clusterTenants(x.Index))
	if err != nil {
		return nil, err
	}
	wsController.Events = x.Events.Recorder("workspace-controller")
	// A purged workspace's usage leaves its tenant's record with it.
	wsController.PurgeUsage = x.Quota.purgeUsage
	// Content goes through the API (finalizers, controllers) before the
	// purge; the loopback identity is a hub administrator.
	wsController.DeleteContentFirst(workspaces.NewAPIContent(s.LoopbackClientConfig), x.WorkspaceDeletionGracePeriod)
	reserved := sets.New[string]()
	for gv, m := range builtin {
		for res := range m {
			reserved.Insert(wstorage.ResourcePrefix(gv.Group, res))
		}
	}
	crdClient, err := apiextensionsclient.NewForConfig(s.LoopbackClientConfig)
	if err != nil {
		return nil, err
	}
	crdController, err := crdcleanup.New(crdClient, x.EtcdClient, x.EtcdPrefix, reserved, clusterTenants(x.Index))
	if err != nil {
		return nil, err
	}
	legacyDiscovery := newLegacyGroupDiscovery(s.DiscoveryGroupManager, crdClient)
	x.APIView.install(s, crdServer.GenericAPIServer, legacyDiscovery.informer)

	if err := s.AddPostStartHook("wharf-root-workspace", func(hc genericapiserver.PostStartHookContext) error {
		return h.ensureDefaultNamespace(hc)
	}); err != nil {
		return nil, err
	}
	bg := []background{
		{name: "wharf-events", run: x.Events.Run},
		{name: "wharf-workspace-index", run: x.Index.Run, synced: x.Index.HasSynced},
		{name: "wharf-rbac", run: rbacAuthz.Run, synced: rbacAuthz.HasSynced},
		{name: "wharf-workspace-controller", run: func(ctx context.Context) {
			go runWorkspaceMetrics(ctx, wsController.Lister(), x.Index)
			wsController.Run(ctx, 2)
		}, synced: wsController.HasSynced},
		{name: "wharf-namespace-controller", run: func(ctx context.Context) { nsController.Run(ctx, 2) }, synced: nsController.HasSynced},
		{name: "wharf-garbage-collector", run: func(ctx context.Context) { collector.Run(ctx, 2) }, synced: collector.HasSynced},
		{name: "wharf-crd-cleanup", run: crdController.Run},
		{name: "wharf-legacy-discovery", run: legacyDiscovery.Run},
		h.storeMonitorBackground(),
	}
	quotaBG, err := x.Quota.background(wsREST)
	if err != nil {
		return nil, err
	}
	bg = append(bg, quotaBG...)
	rqBG, err := h.installResourceQuota(builtin)
	if err != nil {
		return nil, err
	}
	bg = append(bg, rqBG...)
	bg = append(bg, catalogBG...)
	bg = append(bg, apiServicesBG...)
	if err := startBackground(s, bg); err != nil {
		return nil, err
	}
	if err := x.Replicas.start(s); err != nil {
		return nil, err
	}
	if err := s.AddPreShutdownHook("wharf-provider-handover", h.handoverHook); err != nil {
		return nil, err
	}
	return h, nil
}

// ensureDefaultNamespace creates root's default and kube-system namespaces
// on first start.
func (h *Hub) ensureDefaultNamespace(ctx context.Context) error {
	var lastErr error
	for i := 0; i < 60; i++ {
		err := h.initializeWorkspace(ctx, h.rootID, nil)
		if err == nil {
			return nil
		}
		lastErr = err
		klog.V(2).InfoS("Waiting to create root default namespace", "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return fmt.Errorf("creating root default namespace: %w", lastErr)
}

// Run serves until ctx is done, then drains (drain.go): /readyz fails at
// once and single-replica providers are handed over (a pre-shutdown hook,
// while the API still serves); after the shutdown delay the server stops
// listening; what is in flight gets the grace period; then the plugins
// stop, and embedded etcd last.
func (h *Hub) Run(ctx context.Context) error {
	defer func() {
		_ = h.Extra.EtcdClient.Close()
		if h.Extra.Embedded != nil {
			h.Extra.Embedded.Close()
		}
	}()
	// Provider plugins outlive the server's drain, which their streams
	// are part of; Run waits for the host to stop and kill them.
	pluginsCtx, stopPlugins := context.WithCancel(context.WithoutCancel(ctx))
	defer stopPlugins()
	pluginsDone := make(chan error, 1)
	go func() { pluginsDone <- h.Extra.Plugins.Run(pluginsCtx) }()
	go runProviderMetrics(ctx, h.Extra.Plugins)
	var shutdownStart atomic.Pointer[time.Time]
	go func() {
		<-ctx.Done()
		now := time.Now()
		shutdownStart.Store(&now)
	}()
	prepared := h.Generic.PrepareRun()
	h.Extra.Serving.prepare(h.Generic)
	klog.InfoS("Wharf hub starting", "url", h.Extra.ExternalURL, "rootCluster", h.rootID)
	err := prepared.RunWithContext(ctx)
	// A no-op after a normal run (the generic server stopped it); after a
	// failed start, the real listener closes.
	h.Extra.Serving.close()
	start := time.Now()
	if s := shutdownStart.Load(); s != nil {
		start = *s
	}
	h.drainStreams(context.WithoutCancel(ctx), start)
	stopPlugins()
	if perr := <-pluginsDone; perr != nil {
		klog.ErrorS(perr, "Stopping provider plugins")
	}
	return err
}

// RootCluster returns the logical cluster id of root.
func (h *Hub) RootCluster() cluster.ID { return h.rootID }

// authorizerOf returns the server's full authorizer chain for the
// escalate and bind checks, so grants from any authorizer count.
func authorizerOf(s *genericapiserver.GenericAPIServer) authorizer.Authorizer {
	if a, ok := s.Authorizer.(authorizer.Authorizer); ok {
		return a
	}
	return authorizer.AuthorizerFunc(s.Authorizer.Authorize)
}

// newCollector tracks ownership among the built-in kinds but Namespaces
// (their content goes through the namespace controller) and the hub's own
// kinds; WatchCustomResources adds every CRD's instances.
func newCollector(builtin map[schema.GroupVersion]map[string]rest.Storage, tenantOf controller.TenantOfCluster) (*gc.Collector, error) {
	var resources []*gc.Resource
	for gv, kinds := range registry.BuiltinKinds() {
		for _, k := range kinds {
			if k.Resource == corev1.Resource("namespaces") {
				continue
			}
			store, ok := builtin[gv][k.Resource.Resource].(gc.Store)
			if !ok {
				return nil, fmt.Errorf("storage of %s cannot be garbage collected", k.Resource)
			}
			kind := reflect.TypeOf(k.New()).Elem().Name()
			resources = append(resources, &gc.Resource{
				Kind: schema.GroupKind{Group: gv.Group, Kind: kind}, Namespaced: k.Namespaced, Store: store, New: k.New,
			})
		}
	}
	// The hub's own kinds are owners and dependents too (all cluster-scoped
	// within their workspace); their stores keep their own rules on every
	// write the collector makes (a Workspace keeps its cleanup finalizer).
	for _, h := range []struct {
		gv       schema.GroupVersion
		resource string
		new      func() runtime.Object
	}{
		{tenancyv1alpha1.SchemeGroupVersion, "workspaces", func() runtime.Object { return &tenancyv1alpha1.Workspace{} }},
		{providersv1alpha1.SchemeGroupVersion, "catalogentries", func() runtime.Object { return &providersv1alpha1.CatalogEntry{} }},
		{providersv1alpha1.SchemeGroupVersion, "providerbindings", func() runtime.Object { return &providersv1alpha1.ProviderBinding{} }},
		// An APIService may be owned (the resource-proxy provider's
		// ResourceProxy); the collector deletes it through storage.
		{apiregv1.SchemeGroupVersion, "apiservices", func() runtime.Object { return &apiregv1.APIService{} }},
	} {
		store, ok := builtin[h.gv][h.resource].(gc.Store)
		if !ok {
			return nil, fmt.Errorf("storage of %s.%s cannot be garbage collected", h.resource, h.gv.Group)
		}
		kind := reflect.TypeOf(h.new()).Elem().Name()
		resources = append(resources, &gc.Resource{Kind: schema.GroupKind{Group: h.gv.Group, Kind: kind}, Store: store, New: h.new})
	}
	return gc.New(resources, tenantOf)
}
