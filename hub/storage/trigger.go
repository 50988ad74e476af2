package storage

import (
	"maps"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"

	"github.com/wharfhub/wharf/hub/cluster"
)

// clusterField is the field under which a cached resource's objects name
// their logical cluster to the watch cache, and the name of its trigger.
// Registries never see it: their field selectors are validated before
// storage, so no client can select on it.
const clusterField = ClusterAnnotation

// Why a trigger: upstream's watch cache hands each event to the watchers
// of the event's namespace and to every cluster-wide watcher. Namespace
// names repeat across workspaces, so without it a write in "default" of
// any workspace woke every "default" and every all-namespaces watch of
// every workspace, each of which then dropped it by key: one tenant's
// thousands of watches taxed every other tenant's writes (issue 24, B5).
// A watcher whose predicate requires an exact value of the resource's
// trigger sits in the cache's per-value set instead, and an event goes
// only to the watchers of its own value: its workspace's. The hub's own
// informers watch every cluster, name no value, and still see everything.

// clusterTrigger is the trigger function: the object's cluster ("" for
// the read guard's stand-ins, which no workspace watcher is sent).
func clusterTrigger(obj runtime.Object) string {
	id, err := clusterOf(obj)
	if err != nil {
		return ""
	}
	return string(id)
}

// withClusterField adds the object's cluster to what getAttrs returns,
// so that a predicate requiring it (byCluster) matches.
func withClusterField(getAttrs storage.AttrFunc) storage.AttrFunc {
	return func(obj runtime.Object) (labels.Set, fields.Set, error) {
		l, f, err := getAttrs(obj)
		if err != nil {
			return l, f, err
		}
		f = maps.Clone(f)
		if f == nil {
			f = fields.Set{}
		}
		f[clusterField] = clusterTrigger(obj)
		return l, f, nil
	}
}

// byCluster narrows a watch predicate to cluster id in a way the watch
// cache can index: it requires the cluster field, names it an index field,
// and reads it through withClusterField. It matches exactly the objects
// the unchanged predicate matches under the cluster's key prefix, which
// the key already restricts the watch to.
func byCluster(p storage.SelectionPredicate, id cluster.ID) storage.SelectionPredicate {
	if p.GetAttrs == nil {
		return p
	}
	field := p.Field
	if field == nil {
		field = fields.Everything()
	}
	p.Field = fields.AndSelectors(field, fields.OneTermEqualSelector(clusterField, string(id)))
	p.IndexFields = append(append([]string(nil), p.IndexFields...), clusterField)
	p.GetAttrs = withClusterField(p.GetAttrs)
	return p
}
