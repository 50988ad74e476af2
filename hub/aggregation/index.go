package aggregation

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/tools/cache"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/wharfhub/wharf/hub/cluster"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

const (
	byGroupVersion = "clusterGroupVersion"
	byCluster      = "cluster"
)

// Index maps (cluster, group, version) to the APIService that routes it,
// from an informer over every workspace's APIService storage (as the hub,
// no authorization). Every replica builds the same index from etcd, so
// they route alike.
type Index struct {
	informer cache.SharedIndexInformer
}

// NewIndex builds the informer; Run starts it.
func NewIndex(s wstorage.ListWatcher) (*Index, error) {
	inf, err := wstorage.NewClusterInformer(s, &apiregv1.APIService{}, 10*time.Minute)
	if err != nil {
		return nil, err
	}
	if err := inf.AddIndexers(cache.Indexers{
		byGroupVersion: func(obj interface{}) ([]string, error) {
			s := obj.(*apiregv1.APIService)
			id, _ := wstorage.SplitClusterNamespace(s)
			return []string{gvKey(id, s.Spec.Group, s.Spec.Version)}, nil
		},
		byCluster: func(obj interface{}) ([]string, error) {
			id, _ := wstorage.SplitClusterNamespace(obj.(*apiregv1.APIService))
			return []string{string(id)}, nil
		},
	}); err != nil {
		return nil, fmt.Errorf("apiservice indexers: %w", err)
	}
	return &Index{informer: inf}, nil
}

func gvKey(id cluster.ID, group, version string) string {
	return string(id) + "/" + group + "/" + version
}

// Run runs the informer until ctx is done.
func (x *Index) Run(ctx context.Context) { x.informer.RunWithContext(ctx) }

// HasSynced reports whether the informer has listed once.
func (x *Index) HasSynced() bool { return x.informer.HasSynced() }

// Informer is the underlying informer (the Available controller follows it).
func (x *Index) Informer() cache.SharedIndexInformer { return x.informer }

// Route returns the provider that serves group/version in cluster id, and
// the APIService (a KeyByCluster copy: read-only).
func (x *Index) Route(id cluster.ID, group, version string) (string, *apiregv1.APIService, bool) {
	objs, err := x.informer.GetIndexer().ByIndex(byGroupVersion, gvKey(id, group, version))
	if err != nil {
		return "", nil, false
	}
	for _, o := range objs {
		s := o.(*apiregv1.APIService)
		// Only what validation admits: a provider in wharf-providers, and
		// the object's name matching its group version.
		if s.Spec.Service != nil && s.Spec.Service.Namespace == ProviderNamespace && s.Spec.Service.Name != "" &&
			s.Name == s.Spec.Version+"."+s.Spec.Group && s.DeletionTimestamp == nil {
			return s.Spec.Service.Name, s, true
		}
	}
	return "", nil, false
}

// InCluster returns the routed APIServices of one workspace.
func (x *Index) InCluster(id cluster.ID) []*apiregv1.APIService {
	objs, err := x.informer.GetIndexer().ByIndex(byCluster, string(id))
	if err != nil {
		return nil
	}
	var out []*apiregv1.APIService
	for _, o := range objs {
		s := o.(*apiregv1.APIService)
		if _, r, ok := x.Route(id, s.Spec.Group, s.Spec.Version); ok && r == s {
			out = append(out, s)
		}
	}
	return out
}
