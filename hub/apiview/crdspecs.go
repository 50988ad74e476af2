package apiview

import (
	"fmt"
	"reflect"
	"sort"
	"sync"

	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	apiextensionsfeatures "k8s.io/apiextensions-apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// crdSpec is what one CRD adds to the OpenAPI documents, built by the
// upstream builder with the options upstream's OpenAPI controllers use.
type crdSpec struct {
	name, group string
	v2          *spec.Swagger
	// v3 maps "apis/<group>/<version>" to the CRD's document of that
	// version.
	v3 map[string]*spec3.OpenAPI
}

// crdSpecs follows the CRDs and builds their specs on demand; gen changes
// whenever a CRD's contribution may have changed, so documents built from
// an older generation are dropped.
type crdSpecs struct {
	informer cache.SharedIndexInformer

	mu    sync.Mutex
	gen   uint64
	built map[string]*crdSpec // by CRD name, for the current gen
}

func newCRDSpecs(informer cache.SharedIndexInformer) *crdSpecs {
	c := &crdSpecs{informer: informer, built: map[string]*crdSpec{}}
	bump := func() {
		c.mu.Lock()
		c.gen++
		c.built = map[string]*crdSpec{}
		c.mu.Unlock()
	}
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(interface{}) { bump() },
		UpdateFunc: func(oldObj, newObj interface{}) {
			o, ok1 := oldObj.(*apiextensionsv1.CustomResourceDefinition)
			n, ok2 := newObj.(*apiextensionsv1.CustomResourceDefinition)
			// Status updates other than Established change nothing
			// the documents show.
			if ok1 && ok2 && reflect.DeepEqual(o.Spec, n.Spec) && established(o) == established(n) {
				return
			}
			bump()
		},
		DeleteFunc: func(interface{}) { bump() },
	})
	return c
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established)
}

// visible returns the generation and the specs of the established CRDs
// whose group keep accepts, sorted by CRD name.
func (c *crdSpecs) visible(keep func(group string) bool) (uint64, []*crdSpec) {
	// The generation is read before the CRDs: a change while they are
	// listed moves it on, so what is built now is never kept under the
	// newer generation.
	c.mu.Lock()
	gen := c.gen
	c.mu.Unlock()
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, o := range c.informer.GetStore().List() {
		if crd, ok := o.(*apiextensionsv1.CustomResourceDefinition); ok && established(crd) && keep(crd.Spec.Group) {
			crds = append(crds, crd)
		}
	}
	sort.Slice(crds, func(i, j int) bool { return crds[i].Name < crds[j].Name })
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*crdSpec, 0, len(crds))
	for _, crd := range crds {
		s, ok := c.built[crd.Name]
		if !ok {
			var err error
			if s, err = buildCRDSpec(crd); err != nil {
				// As upstream: a CRD whose schema cannot be published is
				// left out of the documents, the others are served.
				klog.ErrorS(err, "Building the OpenAPI of a CRD", "crd", crd.Name)
				s = &crdSpec{name: crd.Name, group: crd.Spec.Group}
			}
			if gen == c.gen {
				c.built[crd.Name] = s
			}
		}
		out = append(out, s)
	}
	return gen, out
}

func buildCRDSpec(crd *apiextensionsv1.CustomResourceDefinition) (*crdSpec, error) {
	selectable := utilfeature.DefaultFeatureGate.Enabled(apiextensionsfeatures.CustomResourceFieldSelectors)
	s := &crdSpec{name: crd.Name, group: crd.Spec.Group, v2: &spec.Swagger{}, v3: map[string]*spec3.OpenAPI{}}
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		v2, err := builder.BuildOpenAPIV2(crd, v.Name, builder.Options{V2: true, IncludeSelectableFields: selectable})
		if err != nil {
			return nil, fmt.Errorf("openapi v2 of %s/%s: %w", crd.Name, v.Name, err)
		}
		// The static spec has its defaults pruned; so must the CRD's,
		// for the two to merge cleanly (as upstream's controller does).
		v2.Definitions = handler.PruneDefaults(v2.Definitions)
		if s.v2, err = builder.MergeSpecs(s.v2, v2); err != nil {
			return nil, fmt.Errorf("merging openapi v2 of %s/%s: %w", crd.Name, v.Name, err)
		}
		v3, err := builder.BuildOpenAPIV3(crd, v.Name, builder.Options{V2: false, IncludeSelectableFields: selectable})
		if err != nil {
			return nil, fmt.Errorf("openapi v3 of %s/%s: %w", crd.Name, v.Name, err)
		}
		s.v3["apis/"+crd.Spec.Group+"/"+v.Name] = v3
	}
	return s, nil
}
