package server

import (
	"net/http"
	"strings"
	"sync/atomic"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/wharfhub/wharf/hub/apiview"
)

// apiViews links the per-workspace discovery and OpenAPI (hub/apiview)
// into the handler chain, which is built before the servers whose
// documents it narrows: New fills in the OpenAPI part.
type apiViews struct {
	view    *apiview.View
	openapi atomic.Pointer[apiview.OpenAPI]
}

// newAPIViews sees the hub's own groups and apiextensions.k8s.io in every
// workspace; other groups as the catalog decides.
func newAPIViews(c *catalogState) *apiViews {
	always := []string{"", apiextensionsv1.GroupName}
	for _, gv := range servedGroupVersions {
		always = append(always, gv.Group)
	}
	return &apiViews{view: apiview.NewView(c, always...)}
}

// wrap puts discovery and OpenAPI filtering around h.
func (a *apiViews) wrap(h http.Handler) http.Handler {
	disc := a.view.WithDiscovery(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := a.openapi.Load(); o != nil {
			o.WithOpenAPI(disc).ServeHTTP(w, r)
			return
		}
		disc.ServeHTTP(w, r)
	})
}

// install builds the OpenAPI documents from the hub's and the CRD
// server's static specs and the CRDs informer follows.
func (a *apiViews) install(hub, crds *genericapiserver.GenericAPIServer, informer cache.SharedIndexInformer) {
	a.openapi.Store(apiview.NewOpenAPI(a.view, informer, apiview.Base{
		// Read at the first request: PrepareRun builds them.
		V2: func() []*spec.Swagger { return []*spec.Swagger{hub.StaticOpenAPISpec, crds.StaticOpenAPISpec} },
		V3: []http.Handler{hub.Handler.NonGoRestfulMux, crds.Handler.NonGoRestfulMux},
		V3Groups: []func(string) bool{nil, func(gv string) bool {
			group := "apis/" + apiextensionsv1.GroupName
			return gv == group || strings.HasPrefix(gv, group+"/")
		}},
	}))
}

// Ready implements apiview.Enablement.
func (c *catalogState) Ready() bool {
	_, ok := c.ready()
	return ok
}
