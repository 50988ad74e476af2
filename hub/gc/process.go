package gc

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/cluster"
)

// process handles one object: as an owner being deleted (orphan or
// foreground), and as a dependent whose owners may be gone. It asks to be
// requeued while a foreground deletion waits for blocking dependents.
func (c *Collector) process(ctx context.Context, k objKey) (bool, error) {
	n, deps := c.snapshot(k)
	if n == nil {
		return false, nil
	}
	if n.deleting && (n.hasFinalizer(metav1.FinalizerOrphanDependents) || n.hasFinalizer(metav1.FinalizerDeleteDependents)) {
		// Acting on an owner's dependents needs all of them in the graph:
		// wait for new custom resource monitors to list theirs.
		if c.crds != nil && !c.crds.customSynced() {
			return true, nil
		}
		if n.hasFinalizer(metav1.FinalizerOrphanDependents) {
			return false, c.orphan(ctx, n, deps)
		}
		return c.foreground(ctx, n, deps)
	}
	if len(n.owners) == 0 || n.deleting {
		return false, nil
	}
	return false, c.collectIfOrphaned(ctx, n)
}

// orphan removes n from its dependents' owners, then its orphan finalizer.
func (c *Collector) orphan(ctx context.Context, n *node, deps []*node) error {
	for _, d := range deps {
		err := c.update(ctx, d, func(m metav1.Object) {
			var kept []metav1.OwnerReference
			for _, o := range m.GetOwnerReferences() {
				if o.UID != n.uid {
					kept = append(kept, o)
				}
			}
			m.SetOwnerReferences(kept)
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("orphaning %s %s/%s: %w", d.mon.kind, d.namespace, d.name, err)
		}
	}
	return c.dropFinalizer(ctx, n, metav1.FinalizerOrphanDependents)
}

// foreground deletes n's dependents and drops its finalizer once none that
// blocks owner deletion is left.
func (c *Collector) foreground(ctx context.Context, n *node, deps []*node) (bool, error) {
	blocking := 0
	for _, d := range deps {
		if b := refTo(d, n.uid).BlockOwnerDeletion; b != nil && *b {
			blocking++
		}
		if !d.deleting {
			if err := c.delete(ctx, d, metav1.DeletePropagationForeground); err != nil {
				return false, err
			}
		}
	}
	if blocking > 0 {
		return true, nil
	}
	return false, c.dropFinalizer(ctx, n, metav1.FinalizerDeleteDependents)
}

// collectIfOrphaned deletes n when none of its owners exists any more. If
// an owner is itself in foreground deletion, n goes in the foreground too.
func (c *Collector) collectIfOrphaned(ctx context.Context, n *node) error {
	policy := metav1.DeletePropagationBackground
	for _, ref := range n.owners {
		exists, waiting, err := c.ownerState(ctx, n, ref)
		if err != nil {
			return err
		}
		if exists && !waiting {
			return nil
		}
		if waiting {
			policy = metav1.DeletePropagationForeground
		}
	}
	klog.V(2).InfoS("Collecting object whose owners are gone", "cluster", n.cluster, "kind", n.mon.kind, "namespace", n.namespace, "name", n.name)
	return c.delete(ctx, n, policy)
}

// ownerState reports whether an owner exists and whether it is waiting for
// its dependents (foreground deletion). The owner is looked for in n's
// cluster only, and must carry the referenced uid: an object of that name
// with another uid is a different object, so the owner is absent. Kinds
// the collector does not watch count as existing: it never deletes an
// object because it could not see its owner.
func (c *Collector) ownerState(ctx context.Context, n *node, ref metav1.OwnerReference) (exists, waiting bool, err error) {
	if o := c.lookup(objKey{cluster: n.cluster, uid: ref.UID}); o != nil {
		return true, o.deleting && o.hasFinalizer(metav1.FinalizerDeleteDependents), nil
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return true, false, nil
	}
	m := c.monitorOf(schema.GroupKind{Group: gv.Group, Kind: ref.Kind})
	if m == nil {
		return true, false, nil
	}
	// Not in the graph: confirm with a quorum read before acting, since the
	// owner's informer may simply lag behind the dependent's.
	ns := ""
	if m.namespaced {
		ns = n.namespace
	}
	o, err := m.store.get(scoped(ctx, n.cluster, ns), ref.Name)
	if apierrors.IsNotFound(err) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("reading owner %s %q of %s/%s: %w", m.kind, ref.Name, n.namespace, n.name, err)
	}
	if o.GetUID() != ref.UID {
		return false, false, nil
	}
	return true, o.GetDeletionTimestamp() != nil && hasString(o.GetFinalizers(), metav1.FinalizerDeleteDependents), nil
}

func (c *Collector) delete(ctx context.Context, n *node, policy metav1.DeletionPropagation) error {
	err := n.mon.store.delete(scoped(ctx, n.cluster, n.namespace), n.name, n.uid, policy)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting %s %s/%s: %w", n.mon.kind, n.namespace, n.name, err)
	}
	return nil
}

func (c *Collector) dropFinalizer(ctx context.Context, n *node, f string) error {
	err := c.update(ctx, n, func(m metav1.Object) {
		var kept []string
		for _, x := range m.GetFinalizers() {
			if x != f {
				kept = append(kept, x)
			}
		}
		m.SetFinalizers(kept)
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// update applies mutate to the current object, guarded by its uid.
func (c *Collector) update(ctx context.Context, n *node, mutate func(metav1.Object)) error {
	return n.mon.store.update(scoped(ctx, n.cluster, n.namespace), n.name, n.uid, mutate)
}

func scoped(ctx context.Context, id cluster.ID, ns string) context.Context {
	return request.WithNamespace(cluster.WithCluster(ctx, id), ns)
}

func refTo(n *node, owner types.UID) metav1.OwnerReference {
	for _, o := range n.owners {
		if o.UID == owner {
			return o
		}
	}
	return metav1.OwnerReference{}
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
