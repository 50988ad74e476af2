package workspaces

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"

	tenancyv1alpha1 "github.com/wharfhub/wharf/hub/apis/tenancy/v1alpha1"
	"github.com/wharfhub/wharf/hub/cluster"
)

// orphanGrace is how old an allocation must be before it can be collected:
// far longer than any creation takes between allocating the path and
// storing the Workspace.
const orphanGrace = 2 * time.Minute

// collectOrphans releases logical clusters that no Workspace object claims.
// They appear when a hub dies between allocating a path and storing the
// Workspace; left alone, the path could never be created again.
func (c *Controller) collectOrphans(ctx context.Context) {
	infos, allocated, err := c.index.All(ctx)
	if err != nil {
		klog.ErrorS(err, "Collecting orphaned workspaces")
		return
	}
	for id, info := range infos {
		parentPath, name, ok := info.Path.Parent()
		if !ok || info.Terminating || time.Since(allocated[id]) < orphanGrace {
			continue
		}
		parent, err := c.index.Resolve(ctx, string(parentPath))
		if err == nil {
			pctx := request.WithNamespace(cluster.WithCluster(ctx, parent.ID), metav1.NamespaceNone)
			obj, err := c.rest.Get(pctx, name, &metav1.GetOptions{})
			if err == nil && obj.(*tenancyv1alpha1.Workspace).Status.Cluster == string(id) {
				continue // claimed
			}
			if err != nil && !apierrors.IsNotFound(err) {
				klog.ErrorS(err, "Checking workspace", "path", info.Path)
				continue
			}
		} else if err != ErrNotFound {
			continue
		}
		klog.InfoS("Releasing orphaned logical cluster", "path", info.Path, "cluster", id)
		if err := c.purge(ctx, id, info.Path); err != nil {
			klog.ErrorS(err, "Releasing orphaned logical cluster", "path", info.Path)
		}
	}
}
