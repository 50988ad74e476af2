package workspaces

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	tenancyv1alpha1 "github.com/wharfhub/wharf/hub/apis/tenancy/v1alpha1"
	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/controller"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

// Controller finishes workspace deletion: it marks the workspace and its
// descendants terminating, removes every key of their logical clusters from
// etcd, releases their paths, and finally drops the finalizer.
//
// Every step is idempotent, so any hub replica may run it and a crash at any
// point is repaired by the next attempt.
type Controller struct {
	rest       *REST
	status     *StatusREST
	index      *Index
	etcd       *clientv3.Client
	etcdPrefix string

	keyed *controller.Keyed
}

// NewController wires a deletion controller over the Workspace storage.
func NewController(r *REST, status *StatusREST, index *Index, etcd *clientv3.Client, etcdPrefix string) (*Controller, error) {
	// Names repeat across parents; the cluster informer keys its copies by
	// parent cluster too.
	inf, err := wstorage.NewClusterInformer(r, &tenancyv1alpha1.Workspace{}, 10*time.Minute)
	if err != nil {
		return nil, err
	}
	keyed, err := controller.NewKeyed("workspace-deletion", inf, nil)
	if err != nil {
		return nil, err
	}
	return &Controller{rest: r, status: status, index: index, etcd: etcd, etcdPrefix: etcdPrefix, keyed: keyed}, nil
}

// Lister returns the informer's store of every workspace, for metrics.
func (c *Controller) Lister() cache.Store { return c.keyed.Informer.GetStore() }

// Run processes deletions until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	go wait.UntilWithContext(ctx, c.collectOrphans, time.Minute)
	c.keyed.Run(ctx, workers, c.reconcile)
}

// HasSynced reports whether the controller has seen every workspace.
func (c *Controller) HasSynced() bool { return c.keyed.HasSynced() }

func (c *Controller) reconcile(ctx context.Context, key string) error {
	obj, exists, err := c.keyed.Informer.GetStore().GetByKey(key)
	if err != nil || !exists {
		return err
	}
	ws := obj.(*tenancyv1alpha1.Workspace).DeepCopy()
	ws.Namespace = ""
	if ws.DeletionTimestamp == nil || !hasFinalizer(ws, tenancyv1alpha1.WorkspaceCleanupFinalizer) {
		return nil
	}
	parentCtx := request.WithNamespace(cluster.WithCluster(ctx, cluster.ID(ws.Annotations[wstorage.ClusterAnnotation])), metav1.NamespaceNone)

	if ws.Status.Phase != tenancyv1alpha1.WorkspacePhaseTerminating {
		ws.Status.Phase = tenancyv1alpha1.WorkspacePhaseTerminating
		if _, _, err := c.status.Update(parentCtx, ws.Name, rest.DefaultUpdatedObjectInfo(ws), nil, nil, false, &metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("setting Terminating: %w", err)
		}
	}
	if err := c.purge(ctx, cluster.ID(ws.Status.Cluster), cluster.Path(ws.Status.Path)); err != nil {
		return err
	}
	// Drop the finalizer; the store deletes an object whose deletion is
	// pending once its last finalizer is gone.
	_, _, err = c.rest.Update(parentCtx, ws.Name, rest.DefaultUpdatedObjectInfo(nil, func(ctx context.Context, newObj, oldObj runtime.Object) (runtime.Object, error) {
		w := oldObj.(*tenancyv1alpha1.Workspace).DeepCopy()
		w.Finalizers = removeString(w.Finalizers, tenancyv1alpha1.WorkspaceCleanupFinalizer)
		return w, nil
	}), nil, nil, false, &metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		klog.InfoS("Deleted workspace", "path", ws.Status.Path, "cluster", ws.Status.Cluster)
	}
	return err
}

// purge removes the workspace's logical cluster and every descendant's.
func (c *Controller) purge(ctx context.Context, id cluster.ID, path cluster.Path) error {
	all, err := c.index.Descendants(ctx, path)
	if err != nil {
		return err
	}
	if id != "" {
		all[id] = path
	}
	ids := map[cluster.ID]bool{}
	for d, p := range all {
		ids[d] = true
		if err := c.index.MarkTerminating(ctx, d, p); err != nil {
			return err
		}
	}
	// Twice: a write admitted just before the terminating mark reached a
	// replica can land after the first pass.
	for pass := 0; pass < 2; pass++ {
		n, err := wstorage.PurgeRanges(ctx, c.etcd, c.etcdPrefix, func(_, _ string) []string {
			// Everything of a purged cluster goes, whatever its resource.
			out := make([]string, 0, len(ids))
			for id := range ids {
				out = append(out, string(id)+"/")
			}
			return out
		})
		if err != nil {
			return err
		}
		klog.V(2).InfoS("Purged workspace keys", "path", path, "pass", pass, "keys", n)
		if pass == 0 {
			time.Sleep(time.Second)
		}
	}
	for d, p := range all {
		if err := c.index.Release(ctx, d, p); err != nil {
			return err
		}
	}
	return nil
}

func hasFinalizer(ws *tenancyv1alpha1.Workspace, f string) bool {
	for _, x := range ws.Finalizers {
		if x == f {
			return true
		}
	}
	return false
}

func removeString(list []string, s string) []string {
	out := list[:0:0]
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}
