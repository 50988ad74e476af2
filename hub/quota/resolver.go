package quota

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"k8s.io/client-go/tools/cache"

	tenancyv1alpha1 "github.com/wharfhub/wharf/hub/apis/tenancy/v1alpha1"
	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/fairness"
)

// Ceilings resolves a cluster's tenant and bounds: the flags, overridden
// by the quota.wharf.dev/ annotations of the cluster's own Workspace
// (workspace bounds) and of its tenant's top Workspace (tenant bounds).
type Ceilings struct {
	Options Options
	// PathOf resolves a cluster to its workspace path (the index).
	PathOf func(context.Context, cluster.ID) (cluster.Path, error)

	mu sync.RWMutex
	// byCluster holds the quota annotations of every Workspace that has
	// any, by the cluster it names; byPath the same by path.
	byCluster map[cluster.ID]map[string]string
	byPath    map[cluster.Path]map[string]string
}

var _ Resolver = &Ceilings{}

// TenantOf names the tenant of a workspace path as usage records do.
func TenantOf(p cluster.Path) string { return string(fairness.TreeOf(p)) }

// Limits implements Resolver.
func (c *Ceilings) Limits(ctx context.Context, id cluster.ID) (string, Limits, Limits, error) {
	p, err := c.PathOf(ctx, id)
	if err != nil {
		return "", Limits{}, Limits{}, err
	}
	if p == "" {
		return "", Limits{}, Limits{}, fmt.Errorf("cluster %s has no path", id)
	}
	top := fairness.TreeOf(p)
	c.mu.RLock()
	own, topAnn := c.byCluster[id], c.byPath[top]
	c.mu.RUnlock()
	ws := override(c.Options.Workspace, own, AnnotationMaxObjects, AnnotationMaxBytes, AnnotationMaxChildWorkspaces)
	ten := override(c.Options.Tenant, topAnn, AnnotationMaxTenantObjects, AnnotationMaxTenantBytes, AnnotationMaxTenantWorkspaces)
	return string(top), ws, ten, nil
}

// Watch keeps the overrides current from an informer over every
// Workspace (hub/storage.NewClusterInformer).
func (c *Ceilings) Watch(inf cache.SharedIndexInformer) error {
	c.mu.Lock()
	if c.byCluster == nil {
		c.byCluster, c.byPath = map[cluster.ID]map[string]string{}, map[cluster.Path]map[string]string{}
	}
	c.mu.Unlock()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.set(obj, false) },
		UpdateFunc: func(_, obj any) { c.set(obj, false) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			c.set(obj, true)
		},
	})
	return err
}

func (c *Ceilings) set(obj any, deleted bool) {
	ws, ok := obj.(*tenancyv1alpha1.Workspace)
	if !ok || ws.Status.Cluster == "" {
		return
	}
	var ann map[string]string
	for k, v := range ws.Annotations {
		if strings.HasPrefix(k, AnnotationPrefix) {
			if ann == nil {
				ann = map[string]string{}
			}
			ann[k] = v
		}
	}
	id, p := cluster.ID(ws.Status.Cluster), cluster.Path(ws.Status.Path)
	c.mu.Lock()
	defer c.mu.Unlock()
	if deleted || ann == nil {
		delete(c.byCluster, id)
		delete(c.byPath, p)
		return
	}
	c.byCluster[id] = ann
	if p != "" {
		c.byPath[p] = ann
	}
}
