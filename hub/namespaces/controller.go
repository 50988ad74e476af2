package namespaces

import (
	"context"
	"fmt"
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

// Controller removes the content of deleted namespaces in every workspace.
type Controller struct {
	store      Store
	etcd       *clientv3.Client
	etcdPrefix string
	keyed      *controller.Keyed
	// Events, when set, records into the namespace's workspace that its
	// content was deleted (the Namespace's events live in default there).
	Events *events.Recorder
}

// NewController returns a namespace deletion controller.
func NewController(store Store, etcd *clientv3.Client, etcdPrefix string) (*Controller, error) {
	inf, err := wstorage.NewClusterInformer(store, &corev1.Namespace{}, 10*time.Minute)
	if err != nil {
		return nil, err
	}
	keyed, err := controller.NewKeyed("namespace-deletion", inf, func(obj interface{}) bool {
		ns, ok := obj.(*corev1.Namespace)
		return ok && ns.DeletionTimestamp != nil
	})
	if err != nil {
		return nil, err
	}
	return &Controller{store: store, etcd: etcd, etcdPrefix: etcdPrefix, keyed: keyed}, nil
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
	if ns.DeletionTimestamp == nil || !hasFinalizer(ns.Finalizers) {
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
	err = c.update(nctx, ns.Name, func(n *corev1.Namespace) { n.Finalizers = removeFinalizer(n.Finalizers) })
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	c.Events.Eventf(id, ns, corev1.EventTypeNormal, "NamespaceContentDeleted", "Deleted the content of namespace %s", ns.Name)
	return nil
}

func (c *Controller) update(ctx context.Context, name string, mutate func(*corev1.Namespace)) error {
	_, _, err := c.store.Update(ctx, name, rest.DefaultUpdatedObjectInfo(nil, func(ctx context.Context, _, old runtime.Object) (runtime.Object, error) {
		ns := old.(*corev1.Namespace).DeepCopy()
		mutate(ns)
		return ns, nil
	}), nil, nil, false, &metav1.UpdateOptions{})
	return err
}

func hasFinalizer(fs []string) bool {
	for _, f := range fs {
		if f == ContentFinalizer {
			return true
		}
	}
	return false
}

func removeFinalizer(fs []string) []string {
	var out []string
	for _, f := range fs {
		if f != ContentFinalizer {
			out = append(out, f)
		}
	}
	return out
}
