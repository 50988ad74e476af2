package server

import (
	"context"
	"sort"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/endpoints/discovery"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// legacyGroupDiscovery keeps the unaggregated /apis group list complete.
//
// Upstream, kube-aggregator lists every group, including apiextensions.k8s.io
// and the groups of CRDs, in the legacy /apis document. The hub has no
// aggregator: its own server answers /apis and knows only its own groups.
// Aggregated discovery (what current kubectl uses) is already complete
// through the shared resource manager; this keeps older clients working.
type legacyGroupDiscovery struct {
	groups   discovery.GroupManager
	informer cache.SharedIndexInformer
}

func newLegacyGroupDiscovery(groups discovery.GroupManager, client apiextensionsclient.Interface) *legacyGroupDiscovery {
	f := apiextensionsinformers.NewSharedInformerFactory(client, 10*time.Minute)
	d := &legacyGroupDiscovery{groups: groups, informer: f.Apiextensions().V1().CustomResourceDefinitions().Informer()}
	sync := func(obj interface{}) {
		if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
			d.syncGroup(crd.Spec.Group)
		} else if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			if crd, ok := t.Obj.(*apiextensionsv1.CustomResourceDefinition); ok {
				d.syncGroup(crd.Spec.Group)
			}
		}
	}
	_, _ = d.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    sync,
		UpdateFunc: func(_, obj interface{}) { sync(obj) },
		DeleteFunc: sync,
	})
	return d
}

func (d *legacyGroupDiscovery) Run(ctx context.Context) {
	gv := apiextensionsv1.SchemeGroupVersion
	d.groups.AddGroup(metav1.APIGroup{
		Name:             gv.Group,
		Versions:         []metav1.GroupVersionForDiscovery{{GroupVersion: gv.String(), Version: gv.Version}},
		PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version},
	})
	d.informer.RunWithContext(ctx)
}

// syncGroup recomputes one CRD group from every CRD that serves it, since
// several CRDs can share a group with different versions.
func (d *legacyGroupDiscovery) syncGroup(group string) {
	crds, err := cacheList(d.informer.GetIndexer())
	if err != nil {
		klog.ErrorS(err, "Listing CRDs for discovery")
		return
	}
	served := map[string]bool{}
	for _, crd := range crds {
		if crd.Spec.Group != group || crd.DeletionTimestamp != nil {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if v.Served {
				served[v.Name] = true
			}
		}
	}
	if len(served) == 0 {
		d.groups.RemoveGroup(group)
		return
	}
	versions := make([]string, 0, len(served))
	for v := range served {
		versions = append(versions, v)
	}
	// Same ordering as upstream discovery: v2 > v1 > v1beta2 > v1alpha1.
	sort.Slice(versions, func(i, j int) bool { return version.CompareKubeAwareVersionStrings(versions[i], versions[j]) > 0 })
	g := metav1.APIGroup{Name: group}
	for _, v := range versions {
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: group + "/" + v, Version: v})
	}
	g.PreferredVersion = g.Versions[0]
	d.groups.AddGroup(g)
}

func cacheList(indexer cache.Indexer) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	err := cache.ListAll(indexer, labels.Everything(), func(obj interface{}) {
		out = append(out, obj.(*apiextensionsv1.CustomResourceDefinition))
	})
	return out, err
}
