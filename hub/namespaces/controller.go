package namespaces

import (
	"context"
	"fmt"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/controller"
	"github.com/wharfhub/wharf/hub/events"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

// Store is the Namespace storage the controller needs.
type Store interface {
	wstorage.ListWatcher
	rest.Updater
}

// Controller removes the content of deleted namespaces in every workspace,
// then releases them as upstream's namespace controller does: it removes
// "kubernetes" from spec.finalizers through the finalize subresource,
// which deletes the namespace once no finalizer is left.
type Controller struct {
	store      Store
	finalize   rest.Updater
	etcd       *clientv3.Client
	etcdPrefix string
	keyed      *controller.Keyed
	// Events, when set, records into the namespace's workspace that its
	// content was deleted (the Namespace's events live in default there).
	Events *events.Recorder
}

// NewController returns a namespace deletion controller.
// finalize is the namespaces/finalize storage. Its queue takes turns
// between tenants (tenantOf of each namespace's cluster).
func NewController(store Store, finalize rest.Updater, etcd *clientv3.Client, etcdPrefix string, tenantOf controller.TenantOfCluster) (*Controller, error) {
	inf, err := wstorage.NewClusterInformer(store, &corev1.Namespace{}, 10*time.Minute)
	if err != nil {
		return nil, err
	}
	keyed, err := controller.NewKeyed("namespace-deletion", inf, func(obj interface{}) bool {
		ns, ok := obj.(*corev1.Namespace)
		return ok && ns.DeletionTimestamp != nil
	}, controller.ClusterKeyTenant(tenantOf))
	if err != nil {
		return nil, err
	}
	return &Controller{store: store, finalize: finalize, etcd: etcd, etcdPrefix: etcdPrefix, keyed: keyed}, nil
}

// HasSynced reports whether the controller has seen every namespace.
func (c *Controller) HasSynced() bool { return c.keyed.HasSynced() }

// Run processes deletions until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	c.keyed.Run(ctx, workers, c.reconcile)
}

func (c *Controller) reconcile(ctx context.Context, key string) error {
	obj, exists, err := c.keyed.Informer.GetStore().GetByKey(key)
	if err != nil || !exists {
		return err
	}
	ns := obj.(*corev1.Namespace)
	if ns.DeletionTimestamp == nil || !held(ns) {
		return nil
	}
	id, _ := wstorage.SplitClusterNamespace(ns)
	nctx := request.WithNamespace(cluster.WithCluster(ctx, id), metav1.NamespaceNone)

	// An update of a namespace pending deletion records phase Terminating
	// (see the Namespace strategy), which admission and clients read.
	if ns.Status.Phase != corev1.NamespaceTerminating {
		if err := c.update(nctx, ns.Name, func(*corev1.Namespace) {}); err != nil {
			return fmt.Errorf("marking %s terminating: %w", ns.Name, err)
		}
	}
	// Twice: a create admitted just before admission saw Terminating can
	// land after the first pass.
	for pass := 0; pass < 2; pass++ {
		n, err := wstorage.PurgeRanges(ctx, c.etcd, c.etcdPrefix, func(_, _ string) []string {
			// Namespaced keys are <cluster>/<namespace>/<name>; a
			// cluster-scoped object named like the namespace is
			// <cluster>/<name>, outside this range.
			return []string{string(id) + "/" + ns.Name + "/"}
		})
		if err != nil {
			return err
		}
		klog.V(2).InfoS("Purged namespace content", "cluster", id, "namespace", ns.Name, "pass", pass, "keys", n)
		if pass == 0 {
			time.Sleep(500 * time.Millisecond)
		}
	}
	// The finalize strategy also drops the metadata finalizer of earlier
	// hubs (ContentFinalizer).
	err = update(nctx, c.finalize, ns.Name, func(n *corev1.Namespace) {
		n.Spec.Finalizers = slices.DeleteFunc(n.Spec.Finalizers, func(f corev1.FinalizerName) bool { return f == corev1.FinalizerKubernetes })
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("finalizing namespace %s: %w", ns.Name, err)
	}
	c.Events.Eventf(id, ns, corev1.EventTypeNormal, "NamespaceContentDeleted", "Deleted the content of namespace %s", ns.Name)
	return nil
}

func (c *Controller) update(ctx context.Context, name string, mutate func(*corev1.Namespace)) error {
	return update(ctx, c.store, name, mutate)
}

func update(ctx context.Context, u rest.Updater, name string, mutate func(*corev1.Namespace)) error {
	_, _, err := u.Update(ctx, name, rest.DefaultUpdatedObjectInfo(nil, func(ctx context.Context, _, old runtime.Object) (runtime.Object, error) {
		ns := old.(*corev1.Namespace).DeepCopy()
		mutate(ns)
		return ns, nil
	}), nil, nil, false, &metav1.UpdateOptions{})
	return err
}

// held: the namespace waits for this controller, through spec.finalizers
// or the metadata finalizer of earlier hubs.
func held(ns *corev1.Namespace) bool {
	return slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) || slices.Contains(ns.Finalizers, ContentFinalizer)
}
