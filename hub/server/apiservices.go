package server

import (
	"net/http"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatoropenapi "k8s.io/kube-aggregator/pkg/generated/openapi"
	"k8s.io/kube-openapi/pkg/common"

	"github.com/wharfhub/wharf/hub/aggregation"
	"github.com/wharfhub/wharf/hub/fairness"
	"github.com/wharfhub/wharf/hub/openapi"
	"github.com/wharfhub/wharf/hub/proxy"
	"github.com/wharfhub/wharf/sdk"
)

// aggregationState links the per-workspace API routing (hub/aggregation)
// into the handler chain, built before the storage it reads: New fills in
// the aggregator.
type aggregationState struct {
	backend    *proxy.Backend
	providers  proxy.Providers
	aggregator atomic.Pointer[aggregation.Aggregator]
}

// wrap routes aggregated group versions to providers once New has run;
// before that nothing is aggregated (no APIService is known yet).
func (a *aggregationState) wrap(h http.Handler, s runtime.NegotiatedSerializer) http.Handler {
	var routed atomic.Pointer[http.Handler]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := routed.Load(); p != nil {
			(*p).ServeHTTP(w, r)
			return
		}
		agg := a.aggregator.Load()
		if agg == nil {
			h.ServeHTTP(w, r)
			return
		}
		next := agg.WithAggregation(h, s)
		routed.Store(&next)
		next.ServeHTTP(w, r)
	})
}

// installAPIServices builds the APIService storage (every workspace, like
// every built-in kind), the routing index and the aggregator, and returns
// their background loops.
func (h *Hub) installAPIServices(builtin map[schema.GroupVersion]map[string]rest.Storage, optsGetter generic.RESTOptionsGetter) ([]background, error) {
	x := h.Extra
	st, err := aggregation.NewStorage(x.Scheme, optsGetter, func(group string) bool {
		_, owned := x.Catalog.ProviderOfGroup(group)
		return owned
	})
	if err != nil {
		return nil, err
	}
	builtin[apiregv1.SchemeGroupVersion] = st.Map()
	index, err := aggregation.NewIndex(st.APIServices)
	if err != nil {
		return nil, err
	}
	agg := aggregation.New(aggregation.Config{
		Index: index, Proxy: relayed{x.Aggregation.backend}, Providers: x.Aggregation.providers,
		Enabled: x.Catalog.Enabled, Workspaces: x.Index, Status: st.Status,
		TenantOf: clusterTenants(x.Index),
	})
	x.Aggregation.aggregator.Store(agg)
	x.APIView.view.SetAggregated(agg)
	return []background{
		{name: "wharf-apiservice-index", run: index.Run, synced: index.HasSynced},
		{name: "wharf-apiservice-availability", run: agg.Run},
	}, nil
}

// openAPIDefinitions are the hub's generated definitions and
// kube-aggregator's for the APIService types.
func openAPIDefinitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	defs := openapi.GetOpenAPIDefinitions(ref)
	for k, v := range aggregatoropenapi.GetOpenAPIDefinitions(ref) {
		if _, ok := defs[k]; !ok {
			defs[k] = v
		}
	}
	return defs
}

// relayed forwards to a provider without CPU turns and lends the
// request's seats to the provider's calls back (fairness.Relayed): the
// hub relays bytes, and the provider may call it back as the same tenant.
type relayed struct{ aggregation.Proxy }

func (p relayed) ServeAggregated(w http.ResponseWriter, r *http.Request, provider string, id sdk.Identity, originalPath string) {
	tok, done := fairness.Relayed(r.Context())
	defer done()
	p.Proxy.ServeAggregated(w, r.WithContext(proxy.WithDelegation(r.Context(), tok)), provider, id, originalPath)
}
