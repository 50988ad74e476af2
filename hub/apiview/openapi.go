package apiview

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// maxViews bounds the documents kept at once; past it all are dropped and
// rebuilt on demand (distinct views are few: one per combination of
// enabled providers).
const maxViews = 32

// Base is where the documents of the groups served in every workspace
// come from. The static specs exist once the servers have been prepared
// to run (genericapiserver.PrepareRun), before the first request.
type Base struct {
	// V2 returns the static OpenAPI v2 specs of the hub and of the CRD
	// server (apiextensions.k8s.io, without any CRD).
	V2 func() []*spec.Swagger
	// V3 are the handlers answering /openapi/v3 of the hub and of the
	// CRD server; V3Groups says which of their group-versions to take
	// ("" for all), since the CRD server also lists the CRDs of every
	// workspace.
	V3       []http.Handler
	V3Groups []func(gvPath string) bool
}

// OpenAPI serves each workspace's /openapi/v2 and /openapi/v3.
type OpenAPI struct {
	view *View
	crds *crdSpecs
	base Base

	mu      sync.Mutex
	baseV2  *spec.Swagger
	baseV3  map[string]*spec3.OpenAPI
	views   map[string]*served
	viewGen uint64
}

// served are the documents of one view.
type served struct {
	v2  http.Handler
	v3  *handler3.OpenAPIService
	gvs map[string]bool
}

// NewOpenAPI follows CRDs with informer (which the caller runs).
func NewOpenAPI(v *View, informer cache.SharedIndexInformer, base Base) *OpenAPI {
	return &OpenAPI{view: v, crds: newCRDSpecs(informer), base: base, views: map[string]*served{}}
}

// loadBase builds the documents of the groups served everywhere, once.
func (o *OpenAPI) loadBase(r *http.Request) error {
	if o.baseV2 != nil {
		return nil
	}
	specs := o.base.V2()
	if len(specs) == 0 || specs[0] == nil {
		return fmt.Errorf("the static OpenAPI spec is not built yet")
	}
	v2 := specs[0]
	for _, s := range specs[1:] {
		if s == nil {
			return fmt.Errorf("the CRD server's static OpenAPI spec is not built yet")
		}
		var err error
		if v2, err = builder.MergeSpecs(v2, s); err != nil {
			return fmt.Errorf("merging static OpenAPI specs: %w", err)
		}
	}
	v3 := map[string]*spec3.OpenAPI{}
	for i, h := range o.base.V3 {
		if err := fetchV3(r, h, o.base.V3Groups[i], v3); err != nil {
			return err
		}
	}
	o.baseV2, o.baseV3 = v2, v3
	return nil
}

// fetchV3 reads every group-version document h serves that take accepts.
func fetchV3(r *http.Request, h http.Handler, take func(string) bool, into map[string]*spec3.OpenAPI) error {
	c := internalGet(h, r, "/openapi/v3")
	if c.code != http.StatusOK {
		return fmt.Errorf("reading the OpenAPI v3 index: %d", c.code)
	}
	var index handler3.OpenAPIV3Discovery
	if err := json.Unmarshal(c.body.Bytes(), &index); err != nil {
		return fmt.Errorf("decoding the OpenAPI v3 index: %w", err)
	}
	for gv := range index.Paths {
		if take != nil && !take(gv) {
			continue
		}
		rr := r.Clone(r.Context())
		rr.Header = http.Header{"Accept": []string{"application/json"}}
		d := internalGet(h, rr, "/openapi/v3/"+gv)
		if d.code != http.StatusOK {
			return fmt.Errorf("reading the OpenAPI v3 of %s: %d", gv, d.code)
		}
		s := &spec3.OpenAPI{}
		if err := json.Unmarshal(d.body.Bytes(), s); err != nil {
			return fmt.Errorf("decoding the OpenAPI v3 of %s: %w", gv, err)
		}
		into[gv] = s
	}
	return nil
}

// servedFor returns the documents of the request's view, building them
// when no workspace with the same CRDs asked since they last changed.
func (o *OpenAPI) servedFor(r *http.Request) (*served, error) {
	ctx := r.Context()
	gen, crds := o.crds.visible(func(group string) bool { return o.view.Visible(ctx, group) })
	names := make([]string, len(crds))
	for i, c := range crds {
		names[i] = c.name
	}
	// The key is exactly what the documents contain: the CRDs (by name,
	// at generation gen) on top of the base.
	key := strings.Join(names, ",")
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.loadBase(r); err != nil {
		return nil, err
	}
	if gen > o.viewGen || len(o.views) >= maxViews {
		o.views, o.viewGen = map[string]*served{}, gen
	}
	if s, ok := o.views[key]; ok && gen == o.viewGen {
		return s, nil
	}
	s, err := o.build(crds)
	if err != nil {
		return nil, err
	}
	if gen == o.viewGen {
		// Documents of an older generation (a request that listed the
		// CRDs before a change) are served once, never cached.
		o.views[key] = s
	}
	return s, nil
}

func (o *OpenAPI) build(crds []*crdSpec) (*served, error) {
	v2specs := make([]*spec.Swagger, 0, len(crds))
	byGV := map[string][]*spec3.OpenAPI{}
	for _, c := range crds {
		if c.v2 != nil {
			v2specs = append(v2specs, c.v2)
		}
		for gv, s := range c.v3 {
			byGV[gv] = append(byGV[gv], s)
		}
	}
	v2, err := builder.MergeSpecs(o.baseV2, v2specs...)
	if err != nil {
		return nil, fmt.Errorf("merging CRDs into OpenAPI v2: %w", err)
	}
	mux := http.NewServeMux()
	handler.NewOpenAPIService(v2).RegisterOpenAPIVersionedService("/openapi/v2", mux)
	s := &served{v2: newGzipOnce(mux), v3: handler3.NewOpenAPIService(), gvs: map[string]bool{}}
	for gv, doc := range o.baseV3 {
		s.v3.UpdateGroupVersion(gv, doc)
		s.gvs[gv] = true
	}
	gvs := make([]string, 0, len(byGV))
	for gv := range byGV {
		gvs = append(gvs, gv)
	}
	sort.Strings(gvs)
	for _, gv := range gvs {
		if s.gvs[gv] {
			// A CRD cannot shadow a group-version the hub serves.
			continue
		}
		doc, err := builder.MergeSpecsV3(byGV[gv]...)
		if err != nil {
			return nil, fmt.Errorf("merging CRDs into OpenAPI v3 of %s: %w", gv, err)
		}
		s.v3.UpdateGroupVersion(gv, doc)
		s.gvs[gv] = true
	}
	return s, nil
}
