package workspaces

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	compbasemetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	tenancyv1alpha1 "github.com/wharfhub/wharf/hub/apis/tenancy/v1alpha1"
	"github.com/wharfhub/wharf/hub/cluster"
)

// forcedObjects counts the objects a workspace deletion purged because
// they were still there when the grace period ended, by resource.
var forcedObjects = compbasemetrics.NewCounterVec(&compbasemetrics.CounterOpts{
	Name:           "wharf_workspace_deletion_forced_objects_total",
	Help:           "Objects purged by workspace deletion after the grace period because they (or their finalizers) remained, by resource.",
	StabilityLevel: compbasemetrics.ALPHA,
}, []string{"resource"})

func init() {
	// legacyregistry is the registry the apiserver's /metrics serves.
	legacyregistry.MustRegister(forcedObjects)
}

// deleteContent deletes the child Workspaces of target, each through its
// own deletion (and so its own finalizers and content), and then target's
// content through the API, and reports what remains.
func (c *Controller) deleteContent(ctx context.Context, target Info) (Remaining, error) {
	rem, err := c.deleteChildren(ctx, target.ID)
	if err != nil {
		return rem, err
	}
	if c.content == nil {
		return rem, nil
	}
	more, err := c.content.Delete(ctx, target.ID)
	rem.Merge(more)
	return rem, err
}

// deleteChildren marks every Workspace stored in the cluster id deleted
// and reports those still there. Each child's deletion is its own key in
// the queue (the informer sees it pending), not finished inline here: a
// parent holding hundreds of held children would otherwise occupy a
// worker for as long as all of them take, on every look, and the fair
// queue bounds turns, not their length. A child's Workspace object going
// is a delete in this cluster, which wakes the parent (held.go).
func (c *Controller) deleteChildren(ctx context.Context, id cluster.ID) (Remaining, error) {
	cctx := request.WithNamespace(cluster.WithCluster(ctx, id), metav1.NamespaceNone)
	obj, err := c.rest.Store.List(cctx, &metainternalversion.ListOptions{})
	if err != nil {
		return Remaining{}, fmt.Errorf("listing child workspaces: %w", err)
	}
	var rem Remaining
	for i := range obj.(*tenancyv1alpha1.WorkspaceList).Items {
		child := &obj.(*tenancyv1alpha1.WorkspaceList).Items[i]
		if child.DeletionTimestamp == nil {
			out, _, err := c.rest.Store.Delete(cctx, child.Name, rest.ValidateAllObjectFunc, &metav1.DeleteOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return rem, fmt.Errorf("deleting child workspace %s: %w", child.Name, err)
			}
			ws, ok := out.(*tenancyv1alpha1.Workspace)
			if !ok {
				continue // gone already
			}
			child = ws
		}
		rem.Add(tenancyv1alpha1.Resource("workspaces"), child)
	}
	return rem, nil
}

// report records on ws what its deletion waits for, writing only when the
// condition changes.
func (c *Controller) report(parentCtx context.Context, ws *tenancyv1alpha1.Workspace, reason, msg string) error {
	if cur := meta.FindStatusCondition(ws.Status.Conditions, tenancyv1alpha1.WorkspaceContentDeleted); cur != nil &&
		cur.Status == metav1.ConditionFalse && cur.Reason == reason && cur.Message == msg {
		return nil
	}
	err := c.rest.hubUpdate(parentCtx, ws.Name, func(w *tenancyv1alpha1.Workspace) {
		setCondition(w, tenancyv1alpha1.WorkspaceContentDeleted, metav1.ConditionFalse, reason, msg)
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("recording remaining content of %s: %w", ws.Name, err)
	}
	return nil
}

// forced reports content that outlived the grace period and is about to
// be purged: a log line, the metric, and the ContentDeleted condition
// (visible to watchers until the Workspace goes).
func (c *Controller) forced(parentCtx context.Context, ws *tenancyv1alpha1.Workspace, target Info, rem Remaining) {
	klog.FromContext(parentCtx).Info("Workspace deletion grace period ended; purging remaining content",
		"path", target.Path, "cluster", target.ID, "gracePeriod", c.grace, "objects", rem.Total(), "remaining", rem.String())
	for res, n := range rem.Resources {
		forcedObjects.WithLabelValues(res).Add(float64(n))
	}
	msg := fmt.Sprintf("Purged after the deletion grace period of %s: %s", c.grace, rem.String())
	if rem.Empty() {
		msg = fmt.Sprintf("Purged after the deletion grace period of %s: content deletion did not complete", c.grace)
	}
	if err := c.rest.hubUpdate(parentCtx, ws.Name, func(w *tenancyv1alpha1.Workspace) {
		setCondition(w, tenancyv1alpha1.WorkspaceContentDeleted, metav1.ConditionFalse, tenancyv1alpha1.WorkspaceReasonContentForced, msg)
	}); err != nil && !apierrors.IsNotFound(err) {
		klog.FromContext(parentCtx).Error(err, "Recording forced content deletion", "path", target.Path)
	}
}
