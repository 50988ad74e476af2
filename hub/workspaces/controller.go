package workspaces

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"

	tenancyv1alpha1 "github.com/wharfhub/wharf/hub/apis/tenancy/v1alpha1"
	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/controller"
	"github.com/wharfhub/wharf/hub/events"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

// Controller finishes workspace deletion. It marks the workspace
// Terminating, deletes its child Workspaces (each through its own
// deletion) and its content through the API, so that finalizers and the
// controllers holding them see the deletion, waits for that content to go
// for at most the grace period, then removes every key left of the logical
// clusters from etcd, releases their paths, and drops the finalizer.
//
// What it deletes and purges comes from the index (the records the hub
// wrote when it allocated the cluster), looked up by the parent's cluster
// and the Workspace's name. Nothing in the Workspace object a tenant can
// write decides it.
//
// Every step is idempotent, so any hub replica may run it and a crash at any
// point is repaired by the next attempt.
type Controller struct {
	rest       *REST
	index      *Index
	etcd       *clientv3.Client
	etcdPrefix string
	clock      clock.Clock

	// content deletes a cluster's objects through the API; nil purges at
	// once (child Workspaces are still deleted first).
	content Content
	// grace bounds how long, from the deletion timestamp, content may hold
	// a workspace's deletion before it is purged.
	grace time.Duration

	keyed *controller.Keyed
	// held spaces out the looks at a deletion its content holds (see
	// requeueHeld); wakes brings one forward when its content goes.
	held workqueue.TypedRateLimiter[string]
	// tenantOfKey names a key's tenant, whose timer-driven looks at held
	// deletions paceHeld paces; nil: none paced.
	tenantOfKey func(string) string
	paceMu      sync.Mutex
	paces       *lru.Cache // paceMu; tenant -> *rate.Limiter
	wakes       *wakes
	// Events, when set, records into the parent workspace (where the
	// Workspace object lives) that a deletion finished.
	Events *events.Recorder
	// PurgeUsage, when set, removes the usage records of purged clusters
	// (hub/quota), taking what they recorded from their tenants' records
	// at once; unset, the records' keys are purged with the rest and the
	// tenants' records wait for the quota reconciler.
	PurgeUsage func(context.Context, map[cluster.ID]cluster.Path) error
}

// NewController wires a deletion controller over the Workspace storage.
// Its queue takes turns between tenants: a key (a Workspace object in its
// parent's cluster) is charged to tenantOf of that parent cluster.
func NewController(r *REST, index *Index, etcd *clientv3.Client, etcdPrefix string, tenantOf controller.TenantOfCluster) (*Controller, error) {
	// Names repeat across parents; the cluster informer keys its copies by
	// parent cluster too.
	inf, err := wstorage.NewClusterInformer(r, &tenancyv1alpha1.Workspace{}, 10*time.Minute)
	if err != nil {
		return nil, fmt.Errorf("workspace informer: %w", err)
	}
	keyed, err := controller.NewKeyed("workspace-deletion", inf, nil, controller.ClusterKeyTenant(tenantOf))
	if err != nil {
		return nil, fmt.Errorf("workspace deletion queue: %w", err)
	}
	return &Controller{rest: r, index: index, etcd: etcd, etcdPrefix: etcdPrefix, clock: clock.RealClock{}, keyed: keyed,
		held:  workqueue.NewTypedItemExponentialFailureRateLimiter[string](heldBackoffBase, heldBackoffMax),
		wakes: newWakes(), tenantOfKey: controller.ClusterKeyTenant(tenantOf)}, nil
}

// DeleteContentFirst makes deletion go through content before the purge,
// waiting at most grace after the deletion timestamp.
func (c *Controller) DeleteContentFirst(content Content, grace time.Duration) {
	c.content, c.grace = content, grace
}

// Lister returns the informer's store of every workspace, for metrics.
func (c *Controller) Lister() cache.Store { return c.keyed.Informer.GetStore() }

// Run processes deletions until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	go wait.UntilWithContext(ctx, c.collectOrphans, time.Minute)
	go wait.UntilWithContext(ctx, c.watchDeletes, time.Second)
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
	if needsReadyCondition(ws) {
		// Stored before the hub kept conditions.
		parent := cluster.ID(ws.Annotations[wstorage.ClusterAnnotation])
		pctx := request.WithNamespace(cluster.WithCluster(ctx, parent), metav1.NamespaceNone)
		if err := c.rest.hubUpdate(pctx, ws.Name, func(w *tenancyv1alpha1.Workspace) { markReady(w) }); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("recording Ready of %s: %w", ws.Name, err)
		}
		return nil
	}
	left, err := c.finish(ctx, ws)
	switch {
	case err != nil:
	case left > 0:
		c.keyed.Queue.AddAfter(key, c.requeueHeld(key, left))
	default:
		c.held.Forget(key)
	}
	return err
}

// finish completes the deletion of ws once it is pending. A positive
// duration means content remains: it is what is left of the grace
// period, after which the content is purged.
func (c *Controller) finish(ctx context.Context, ws *tenancyv1alpha1.Workspace) (time.Duration, error) {
	if ws.DeletionTimestamp == nil || !hasFinalizer(ws, tenancyv1alpha1.WorkspaceCleanupFinalizer) {
		return 0, nil
	}
	logger := klog.FromContext(ctx)
	// The storage decorator sets this annotation from the key the object
	// is stored under, overwriting what a client sent.
	parent := cluster.ID(ws.Annotations[wstorage.ClusterAnnotation])
	target, err := c.index.Child(ctx, parent, ws.Name)
	if errors.Is(err, ErrNotFound) {
		// The parent is gone; its purge took this object and every
		// descendant with it.
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("looking up workspace %s in %s: %w", ws.Name, parent, err)
	}
	parentCtx := request.WithNamespace(cluster.WithCluster(ctx, parent), metav1.NamespaceNone)
	if ws.Status.Phase != tenancyv1alpha1.WorkspacePhaseTerminating {
		err := c.rest.hubUpdate(parentCtx, ws.Name, func(w *tenancyv1alpha1.Workspace) { markTerminating(w) })
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("setting Terminating: %w", err)
		}
	}
	if target.ID != "" {
		// No new objects from here on (creates answer 403), as in a
		// terminating namespace; deletes and updates, finalizer removal
		// included, still work.
		if err := c.index.MarkTerminating(ctx, target.ID, target.Path); err != nil {
			return 0, err
		}
		// From here on, deletes in the cluster (its content going, a
		// child's Workspace object) bring the next look forward; a delete
		// during this look queues the key again at once.
		c.wakes.hold(target.ID, keyOf(parent, ws.Name))
		rem, cerr := c.deleteContent(ctx, target)
		if cerr != nil {
			logger.Error(cerr, "Deleting workspace content", "path", target.Path)
		}
		if !rem.Empty() || cerr != nil {
			left := ws.DeletionTimestamp.Add(c.grace).Sub(c.clock.Now())
			if left > 0 {
				reason, msg := rem.Condition()
				if cerr != nil {
					reason, msg = tenancyv1alpha1.WorkspaceReasonSomeResourcesRemain, fmt.Sprintf("Deleting content failed: %v", cerr)
				}
				if err := c.report(parentCtx, ws, reason, msg); err != nil {
					return 0, err
				}
				return left, nil
			}
			c.forced(parentCtx, ws, target, rem)
		}
	}
	if err := c.purge(ctx, target.ID, target.Path); err != nil {
		return 0, err
	}
	c.wakes.release(target.ID)
	// Drop the finalizer; the store deletes an object whose deletion is
	// pending once its last finalizer is gone.
	err = c.rest.hubUpdate(parentCtx, ws.Name, func(w *tenancyv1alpha1.Workspace) {
		w.Finalizers = removeString(w.Finalizers, tenancyv1alpha1.WorkspaceCleanupFinalizer)
	})
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("removing finalizer of %s: %w", target.Path, err)
	}
	logger.Info("Deleted workspace", "path", target.Path, "cluster", target.ID)
	c.Events.Eventf(parent, ws, corev1.EventTypeNormal, "WorkspaceDeleted", "Deleted workspace %s and its content", target.Path)
	return 0, nil
}

// purge removes the logical cluster id (empty if path was never
// allocated) and every descendant of path, per the index.
func (c *Controller) purge(ctx context.Context, id cluster.ID, path cluster.Path) error {
	if _, _, ok := path.Parent(); !ok {
		// Only a Workspace object's path can be purged, and root has none.
		return fmt.Errorf("refusing to purge %q: not a child workspace", path)
	}
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
		n, err := wstorage.PurgeRanges(ctx, c.etcd, c.etcdPrefix, func(group, resource string) []string {
			// Everything of a purged cluster goes, whatever its resource,
			// and so does its usage record (hub/quota keeps one per
			// cluster at <prefix>/wharf.dev/usage/clusters/<id>; ids have
			// a fixed length, so the prefix is that one key): a deleted
			// workspace leaves no key behind.
			usage := group == "wharf.dev" && resource == "usage"
			if usage && c.PurgeUsage != nil {
				return nil // below
			}
			out := make([]string, 0, len(ids))
			for id := range ids {
				if usage {
					out = append(out, "clusters/"+string(id))
					continue
				}
				out = append(out, string(id)+"/")
			}
			return out
		})
		if err != nil {
			return err
		}
		if c.PurgeUsage != nil {
			// After the keys: what a late write recorded before its key
			// went is taken with the record.
			if err := c.PurgeUsage(ctx, all); err != nil {
				return err
			}
		}
		klog.FromContext(ctx).V(2).Info("Purged workspace keys", "path", path, "pass", pass, "keys", n)
		if pass == 0 {
			c.clock.Sleep(time.Second)
		}
	}
	// Deepest first, so that a crash never leaves a descendant's record
	// whose ancestors' are gone while the workspace itself is still held.
	for _, d := range deepestFirst(all) {
		if err := c.index.Release(ctx, d, all[d]); err != nil {
			return err
		}
	}
	return nil
}

func deepestFirst(all map[cluster.ID]cluster.Path) []cluster.ID {
	out := make([]cluster.ID, 0, len(all))
	for id := range all {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool {
		if di, dj := all[out[i]].Depth(), all[out[j]].Depth(); di != dj {
			return di > dj
		}
		return all[out[i]] < all[out[j]]
	})
	return out
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
