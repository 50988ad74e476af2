package gc

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wharfhub/wharf/hub/cluster"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

// node is one object as the collector sees it.
type node struct {
	uid        types.UID
	cluster    cluster.ID
	res        *Resource
	namespace  string
	name       string
	owners     []metav1.OwnerReference
	deleting   bool
	finalizers []string
}

func (n *node) hasFinalizer(f string) bool {
	for _, x := range n.finalizers {
		if x == f {
			return true
		}
	}
	return false
}

// nodeFrom reads an informer object. The informer's copy carries
// "<cluster>/<namespace>" in metadata.namespace (see keyByCluster).
func nodeFrom(obj interface{}, res *Resource) (*node, bool) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, false
	}
	id := cluster.ID(m.GetAnnotations()[wstorage.ClusterAnnotation])
	if id == "" {
		return nil, false
	}
	_, ns := wstorage.SplitClusterNamespace(m)
	return &node{
		uid: m.GetUID(), cluster: id, res: res, namespace: ns, name: m.GetName(),
		owners: m.GetOwnerReferences(), deleting: m.GetDeletionTimestamp() != nil, finalizers: m.GetFinalizers(),
	}, true
}
