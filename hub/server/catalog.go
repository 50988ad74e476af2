package server

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/klog/v2"

	providersv1alpha1 "github.com/wharfhub/wharf/hub/apis/providers/v1alpha1"
	"github.com/wharfhub/wharf/hub/bootstrap"
	"github.com/wharfhub/wharf/hub/catalog"
	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/enablement"
	"github.com/wharfhub/wharf/hub/policy"
	"github.com/wharfhub/wharf/hub/providerauth"
	"github.com/wharfhub/wharf/sdk/plugin"
)

// catalogState links the provider catalog into the parts of the hub built
// before its storage exists (authenticator, authorizer, handler chain,
// plugin host): they hold this, and New fills in the enablement index.
type catalogState struct {
	tokens *providerauth.Tokens
	index  atomic.Pointer[enablement.Index]
}

func newCatalogState() *catalogState { return &catalogState{tokens: providerauth.NewTokens()} }

// ready reports the index once its informers have synced.
func (c *catalogState) ready() (*enablement.Index, bool) {
	x := c.index.Load()
	return x, x != nil && x.HasSynced()
}

// Groups implements providerauth.Scope; nothing before the index syncs.
func (c *catalogState) Groups(provider string) []string {
	if x, ok := c.ready(); ok {
		return x.Groups(provider)
	}
	return nil
}

// Enabled implements providerauth.Scope and enablement.Enabler.
func (c *catalogState) Enabled(id cluster.ID, provider string) bool {
	x, ok := c.ready()
	return ok && x.Enabled(id, provider)
}

// ProviderOfGroup implements enablement.Enabler.
func (c *catalogState) ProviderOfGroup(group string) (string, bool) {
	if x, ok := c.ready(); ok {
		return x.ProviderOfGroup(group)
	}
	return "", false
}

// withEnablement is the enablement filter; until the index has synced it
// answers 503 for every group the hub does not serve itself, since any of
// them may belong to a provider (fail closed).
func (c *catalogState) withEnablement(delegate http.Handler, s runtime.NegotiatedSerializer, a admins) http.Handler {
	enabled := enablement.WithEnablement(delegate, c, a.has)
	own := map[string]bool{"apiextensions.k8s.io": true}
	for _, gv := range servedGroupVersions {
		own[gv.Group] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := c.ready(); !ok {
			if ri, ok := request.RequestInfoFrom(r.Context()); ok && ri.IsResourceRequest && !own[ri.APIGroup] {
				responsewriters.ErrorNegotiated(apierrors.NewServiceUnavailable("the provider catalog is not loaded yet"), s, schema.GroupVersion{}, w, r)
				return
			}
		}
		enabled.ServeHTTP(w, r)
	})
}

// authorizer scopes provider identities (hub/providerauth).
func (c *catalogState) authorizer(w *workspaceRBAC) *providerauth.Authorizer {
	return providerauth.NewAuthorizer(c, func(ctx context.Context) (cluster.ID, bool, bool) {
		if t, ok := cluster.TargetFrom(ctx); ok && t.IsWildcard() {
			return "", true, true
		}
		id, ok := cluster.From(w.withCluster(ctx))
		return id, false, ok
	})
}

// mayUseWildcard lets administrators and provider identities past the
// /clusters/* admission; the authorizer limits providers to list and watch
// of their own groups there.
func mayUseWildcard(a admins) func(user.Info) bool {
	return func(u user.Info) bool { return a.has(u) || providerauth.IsProvider(u) }
}

// restConfig mints a provider's credentials at each plugin (re)start: a
// fresh token (revoking the previous one), the URL of this replica (not
// the external URL: the token lives in this replica's memory only, and a
// load balancer could send the provider elsewhere) and the CA of its
// serving certificate.
func (c *catalogState) restConfig(hubURL, certFile string) func(context.Context, *plugin.Descriptor) (plugin.RestConfig, error) {
	return func(_ context.Context, d *plugin.Descriptor) (plugin.RestConfig, error) {
		chain, err := os.ReadFile(certFile)
		if err != nil {
			return plugin.RestConfig{}, fmt.Errorf("reading serving certificate: %w", err)
		}
		ca, err := bootstrap.RootCA(chain)
		if err != nil {
			return plugin.RestConfig{}, err
		}
		tok, err := c.tokens.Mint(d.Name)
		if err != nil {
			return plugin.RestConfig{}, err
		}
		return plugin.RestConfig{Host: hubURL, BearerToken: tok, CAData: ca}, nil
	}
}

// installCatalog builds the providers.wharf.dev storage, the enablement
// index and controller and the catalog syncer. It returns their background
// loops; the caller installs the storage under the group.
func (h *Hub) installCatalog(builtin map[schema.GroupVersion]map[string]rest.Storage, optsGetter generic.RESTOptionsGetter) ([]background, error) {
	x := h.Extra
	st, err := catalog.NewStorage(x.Scheme, optsGetter, h.rootID)
	if err != nil {
		return nil, err
	}
	builtin[providersv1alpha1.SchemeGroupVersion] = st.Map()
	index, err := enablement.NewIndex(st.Bindings, st.Entries, h.rootID)
	if err != nil {
		return nil, err
	}
	rbacGV := rbacv1.SchemeGroupVersion
	ctrl, err := enablement.NewController(enablement.Config{
		Bindings: st.BindingsCleanup, BindingsStatus: st.BindingsStatus,
		ClusterRoles: builtin[rbacGV]["clusterroles"].(enablement.RBACStore),
		RoleBindings: builtin[rbacGV]["clusterrolebindings"].(enablement.RBACStore),
		Etcd:         x.EtcdClient, EtcdPrefix: x.EtcdPrefix,
		TenantOf: clusterTenants(x.Index),
	}, index)
	if err != nil {
		return nil, err
	}
	x.Catalog.index.Store(index)
	crdClient, err := apiextensionsclient.NewForConfig(h.Generic.LoopbackClientConfig)
	if err != nil {
		return nil, err
	}
	syncer := catalog.NewSyncer(x.Plugins, st, crdClient.ApiextensionsV1().CustomResourceDefinitions(), x.ReplicaName)
	return []background{
		{name: "wharf-catalog-reader", run: func(ctx context.Context) { h.ensureCatalogReader(ctx) }},
		{name: "wharf-catalog-index", run: index.RunEntries, synced: index.HasSynced},
		{name: "wharf-provider-bindings", run: ctrl.Run},
		{name: "wharf-catalog-syncer", run: syncer.Run},
	}, nil
}

// ensureCatalogReader lets every authenticated user read the catalog.
func (h *Hub) ensureCatalogReader(ctx context.Context) {
	for ctx.Err() == nil {
		err := policy.EnsureCatalogReader(ctx, h.policy, h.rootID)
		if err == nil {
			return
		}
		klog.FromContext(ctx).V(2).Info("Retrying the catalog reader role", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
