package rbac

import (
	"context"
	"errors"
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/storage"
)

// Sources are the ListerWatchers the authorizer's informers consume. Each
// must list and watch its resource across every logical cluster (a wildcard
// context) and deliver objects carrying storage.ClusterAnnotation; objects
// without it are ignored.
type Sources struct {
	Roles               cache.ListerWatcher
	RoleBindings        cache.ListerWatcher
	ClusterRoles        cache.ListerWatcher
	ClusterRoleBindings cache.ListerWatcher
}

// New builds an authorizer fed by one informer per source. Nothing runs until
// Run is called.
func New(src Sources) (*Authorizer, error) {
	if src.Roles == nil || src.RoleBindings == nil || src.ClusterRoles == nil || src.ClusterRoleBindings == nil {
		return nil, errors.New("rbac: all four ListerWatchers are required")
	}
	a := newAuthorizer()
	a.queue = newAggregationQueue()
	feeds := []struct {
		lw  cache.ListerWatcher
		obj runtime.Object
		put func(ci *clusterIndex, ns string, obj metav1.Object)
		del func(ci *clusterIndex, ns, name string)
	}{
		{src.Roles, &rbacv1.Role{},
			func(ci *clusterIndex, ns string, o metav1.Object) { ci.putRole(ns, o.(*rbacv1.Role)) },
			(*clusterIndex).deleteRole},
		{src.RoleBindings, &rbacv1.RoleBinding{},
			func(ci *clusterIndex, ns string, o metav1.Object) { ci.putRoleBinding(ns, o.(*rbacv1.RoleBinding)) },
			(*clusterIndex).deleteRoleBinding},
		{src.ClusterRoles, &rbacv1.ClusterRole{},
			func(ci *clusterIndex, _ string, o metav1.Object) { ci.putClusterRole(o.(*rbacv1.ClusterRole)) },
			func(ci *clusterIndex, _, name string) { ci.deleteClusterRole(name) }},
		{src.ClusterRoleBindings, &rbacv1.ClusterRoleBinding{},
			func(ci *clusterIndex, _ string, o metav1.Object) {
				ci.putClusterRoleBinding(o.(*rbacv1.ClusterRoleBinding))
			},
			func(ci *clusterIndex, _, name string) { ci.deleteClusterRoleBinding(name) }},
	}
	for _, f := range feeds {
		inf := cache.NewSharedIndexInformer(f.lw, f.obj, 0, cache.Indexers{})
		if err := inf.SetTransform(storage.KeyByCluster); err != nil {
			return nil, fmt.Errorf("rbac: informer transform for %T: %w", f.obj, err)
		}
		put, del := f.put, f.del
		// A ClusterRole event only files the role; the aggregation it
		// invalidates is recomputed by the aggregation workers, so this
		// handler, shared by every workspace, never waits for one
		// workspace's aggregation (attack review B6b).
		_, aggregates := f.obj.(*rbacv1.ClusterRole)
		handle := func(obj any, put func(*clusterIndex, string, metav1.Object), del func(*clusterIndex, string, string)) {
			if id, ok := a.apply(obj, put, del); ok && aggregates {
				a.aggregateLater(id)
			}
		}
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { handle(obj, put, nil) },
			UpdateFunc: func(_, obj any) { handle(obj, put, nil) },
			DeleteFunc: func(obj any) {
				if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = t.Obj
				}
				handle(obj, nil, del)
			},
		})
		if err != nil {
			return nil, fmt.Errorf("rbac: event handler for %T: %w", f.obj, err)
		}
		a.informers = append(a.informers, inf)
		a.synced = append(a.synced, reg.HasSynced)
	}
	return a, nil
}

// Run runs the informers until ctx is done. Call it once, in its own
// goroutine, then wait for HasSynced.
func (a *Authorizer) Run(ctx context.Context) {
	for _, inf := range a.informers {
		go inf.RunWithContext(ctx)
	}
	go a.runWriteBack(ctx)
	a.runAggregation(ctx)
}

// WaitForSync blocks until HasSynced or ctx is done, and reports which.
func (a *Authorizer) WaitForSync(ctx context.Context) bool {
	return cache.WaitForCacheSync(ctx.Done(), a.HasSynced)
}

// apply routes an informer event to the partition of the object's cluster,
// and returns that cluster. Exactly one of put and del is set.
func (a *Authorizer) apply(obj any, put func(*clusterIndex, string, metav1.Object), del func(*clusterIndex, string, string)) (cluster.ID, bool) {
	m, err := meta.Accessor(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("rbac: unexpected informer object %T: %w", obj, err))
		return "", false
	}
	id := cluster.ID(m.GetAnnotations()[storage.ClusterAnnotation])
	if id == "" {
		// Fail closed: a grant that cannot be placed in a cluster grants nothing.
		utilruntime.HandleError(fmt.Errorf("rbac: %T %s has no %s annotation; ignored", obj, m.GetName(), storage.ClusterAnnotation))
		return "", false
	}
	// Undo keyByCluster: "<cluster>/<ns>", or "<cluster>/" when cluster-scoped.
	ns, _ := strings.CutPrefix(m.GetNamespace(), string(id)+"/")
	a.idx.update(id, func(ci *clusterIndex) {
		if put != nil {
			put(ci, ns, m)
			return
		}
		del(ci, ns, m.GetName())
	})
	return id, true
}
