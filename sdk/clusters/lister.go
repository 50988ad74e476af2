package clusters

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// Lister reads a cluster-keyed store. Every method takes the cluster first,
// so a caller cannot forget which workspace it is reading.
type Lister struct {
	indexer cache.Indexer
}

// NewLister reads an indexer keyed by Key with the ByCluster and
// ByClusterNamespace indexes (such as Informer.Indexer).
func NewLister(indexer cache.Indexer) *Lister { return &Lister{indexer: indexer} }

// Get returns one object; namespace is "" for cluster-scoped objects.
func (l *Lister) Get(cluster, namespace, name string) (runtime.Object, bool, error) {
	obj, ok, err := l.indexer.GetByKey(ToKey(cluster, namespace, name))
	if err != nil || !ok {
		return nil, ok, err
	}
	return obj.(runtime.Object), true, nil
}

// List returns the objects of one cluster matching selector (nil: all).
func (l *Lister) List(cluster string, selector labels.Selector) ([]runtime.Object, error) {
	return l.byIndex(ByCluster, cluster, selector)
}

// ListNamespace returns the objects of one namespace of one cluster.
func (l *Lister) ListNamespace(cluster, namespace string, selector labels.Selector) ([]runtime.Object, error) {
	return l.byIndex(ByClusterNamespace, cluster+"|"+namespace, selector)
}

// Clusters lists the clusters that have at least one object in the store.
func (l *Lister) Clusters() []string { return l.indexer.ListIndexFuncValues(ByCluster) }

func (l *Lister) byIndex(index, value string, selector labels.Selector) ([]runtime.Object, error) {
	items, err := l.indexer.ByIndex(index, value)
	if err != nil {
		return nil, err
	}
	out := make([]runtime.Object, 0, len(items))
	for _, it := range items {
		if selector != nil && !selector.Empty() {
			m, err := meta.Accessor(it)
			if err != nil || !selector.Matches(labels.Set(m.GetLabels())) {
				continue
			}
		}
		out = append(out, it.(runtime.Object))
	}
	return out, nil
}
