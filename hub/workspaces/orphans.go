package workspaces

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/cluster"
)

// orphanGrace is how old an allocation must be before it can be collected:
// far longer than any creation takes between allocating the path and
// storing the Workspace.
const orphanGrace = 2 * time.Minute

// collectOrphans releases logical clusters that no Workspace object claims.
// They appear when a hub dies between allocating a path and storing the
// Workspace; left alone, the path could never be created again.
//
// A record is claimed by the Workspace stored under its path's name in its
// parent's cluster, whatever that object's status says: status is not
// evidence of anything, and a wrong "unclaimed" purges a live workspace.
func (c *Controller) collectOrphans(ctx context.Context) {
	logger := klog.FromContext(ctx)
	infos, allocated, err := c.index.All(ctx)
	if err != nil {
		logger.Error(err, "Collecting orphaned workspaces")
		return
	}
	for id, info := range infos {
		parentPath, name, ok := info.Path.Parent()
		if !ok || info.Terminating || c.clock.Since(allocated[id]) < orphanGrace {
			continue
		}
		claimed, err := c.claimed(ctx, parentPath, name)
		if err != nil {
			logger.Error(err, "Checking workspace", "path", info.Path)
			continue
		}
		if claimed {
			continue
		}
		logger.Info("Releasing orphaned logical cluster", "path", info.Path, "cluster", id)
		if err := c.purge(ctx, id, info.Path); err != nil {
			logger.Error(err, "Releasing orphaned logical cluster", "path", info.Path)
		}
	}
}

// claimed reports whether a Workspace object named name exists in the
// workspace at parentPath. A missing parent claims nothing.
func (c *Controller) claimed(ctx context.Context, parentPath cluster.Path, name string) (bool, error) {
	parent, err := c.index.Lookup(ctx, parentPath)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	pctx := request.WithNamespace(cluster.WithCluster(ctx, parent.ID), metav1.NamespaceNone)
	_, err = c.rest.Get(pctx, name, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}
