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
	mon        *monitor
	namespace  string
	name       string
	owners     []metav1.OwnerReference
	deleting   bool
	finalizers []string
}

func (n *node) key() objKey { return objKey{cluster: n.cluster, uid: n.uid} }

func (n *node) hasFinalizer(f string) bool {
	return hasString(n.finalizers, f)
}

// nodeFrom reads an informer object. The informer's copy carries
// "<cluster>/<namespace>" in metadata.namespace (see keyByCluster).
func nodeFrom(obj interface{}, m *monitor) (*node, bool) {
	a, err := meta.Accessor(obj)
	if err != nil {
		return nil, false
	}
	id := cluster.ID(a.GetAnnotations()[wstorage.ClusterAnnotation])
	if id == "" {
		return nil, false
	}
	_, ns := wstorage.SplitClusterNamespace(a)
	return &node{
		uid: a.GetUID(), cluster: id, mon: m, namespace: ns, name: a.GetName(),
		owners: a.GetOwnerReferences(), deleting: a.GetDeletionTimestamp() != nil, finalizers: a.GetFinalizers(),
	}, true
}
