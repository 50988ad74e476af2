package enablement

import (
	"context"
	"fmt"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	providersv1alpha1 "github.com/wharfhub/wharf/hub/apis/providers/v1alpha1"
	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/controller"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

// Store is the storage the controller writes: get and update.
type Store interface {
	rest.Getter
	rest.Updater
}

// RBACStore is a ClusterRole or ClusterRoleBinding storage.
type RBACStore interface {
	rest.Getter
	rest.Creater
	rest.Updater
	rest.GracefulDeleter
}

// Config is what the Controller writes through.
type Config struct {
	// Bindings must be the binding storage that may drop the cleanup
	// finalizer (catalog.Storage.BindingsCleanup); the served one keeps
	// it, whoever asks.
	Bindings       Store
	BindingsStatus Store
	ClusterRoles   RBACStore
	RoleBindings   RBACStore // ClusterRoleBindings
	Etcd           *clientv3.Client
	EtcdPrefix     string
	// TenantOf charges each binding's work to the tenant of its
	// workspace: the queue takes turns between tenants, so one tenant's
	// thousand bindings (all requeued at once when their provider's
	// readiness changes, or deleted at once) delay another tenant's
	// binding by one item, never by the whole backlog. Nil: one tenant.
	TenantOf controller.TenantOfCluster
}

// Controller reconciles ProviderBindings: grants while live, cleanup and
// finalizer removal once deleted.
type Controller struct {
	cfg   Config
	index *Index
	keyed *controller.Keyed
}

const byProvider = "provider"

// NewController wires the controller to the index's binding informer;
// catalog entry changes requeue the bindings of that provider.
func NewController(cfg Config, x *Index) (*Controller, error) {
	if err := x.bindings.AddIndexers(cache.Indexers{byProvider: func(obj interface{}) ([]string, error) {
		return []string{obj.(*providersv1alpha1.ProviderBinding).Spec.Provider}, nil
	}}); err != nil {
		return nil, fmt.Errorf("binding indexer: %w", err)
	}
	// The binding informer keys by cluster ("<cluster>//<name>").
	keyed, err := controller.NewKeyed("provider-bindings", x.bindings, nil, controller.ClusterKeyTenant(cfg.TenantOf))
	if err != nil {
		return nil, err
	}
	c := &Controller{cfg: cfg, index: x, keyed: keyed}
	requeue := func(obj interface{}) {
		e, ok := obj.(*providersv1alpha1.CatalogEntry)
		if !ok {
			return
		}
		objs, _ := x.bindings.GetIndexer().ByIndex(byProvider, e.Name)
		for _, o := range objs {
			if key, err := cache.MetaNamespaceKeyFunc(o); err == nil {
				keyed.Queue.Add(key)
			}
		}
	}
	if _, err := x.entries.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: requeue, DeleteFunc: requeue,
		// Heartbeats rewrite entries often; only what bindings reflect
		// (the edge proxy grant, readiness) requeues them.
		UpdateFunc: func(old, obj interface{}) {
			o, n := old.(*providersv1alpha1.CatalogEntry), obj.(*providersv1alpha1.CatalogEntry)
			or, nr := meta.FindStatusCondition(o.Status.Conditions, providersv1alpha1.ConditionReady), meta.FindStatusCondition(n.Status.Conditions, providersv1alpha1.ConditionReady)
			if o.Spec.EdgeProxyAccess != n.Spec.EdgeProxyAccess || !apiequality.Semantic.DeepEqual(or, nr) {
				requeue(obj)
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("catalog entry handler: %w", err)
	}
	return c, nil
}

// Run runs the binding informer and the reconcile loop until ctx is done.
func (c *Controller) Run(ctx context.Context) { c.keyed.Run(ctx, 2, c.reconcile) }

// edgeProxyGrant names the ClusterRole and ClusterRoleBinding that give a
// provider proxy access to edges in one workspace.
func edgeProxyGrant(provider string) string { return "wharf:provider:" + provider + ":edge-proxy" }

// hubContext is how the hub itself writes into a workspace.
func hubContext(ctx context.Context, id cluster.ID) context.Context {
	ctx = request.WithUser(ctx, &user.DefaultInfo{Name: "system:wharf:enablement", Groups: []string{user.SystemPrivilegedGroup}})
	return request.WithNamespace(cluster.WithCluster(ctx, id), metav1.NamespaceNone)
}

func (c *Controller) reconcile(ctx context.Context, key string) error {
	obj, exists, err := c.index.bindings.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return err
	}
	b := obj.(*providersv1alpha1.ProviderBinding)
	id, _ := wstorage.SplitClusterNamespace(b)
	hctx := hubContext(ctx, id)
	provider := b.Spec.Provider
	if b.DeletionTimestamp != nil {
		if !slices.Contains(b.Finalizers, providersv1alpha1.BindingCleanupFinalizer) {
			return nil
		}
		// Another live binding of the same provider keeps it enabled.
		if !c.index.Enabled(id, provider) {
			if err := c.disable(hctx, id, provider); err != nil {
				return err
			}
		}
		return c.dropFinalizer(hctx, b.Name)
	}
	entry, known := c.index.Entry(provider)
	if known && entry.Spec.EdgeProxyAccess {
		err = c.grantEdgeProxy(hctx, provider)
	} else {
		err = c.revokeEdgeProxy(hctx, provider)
	}
	if err != nil {
		return err
	}
	return c.setStatus(hctx, b.Name, entry, known)
}

func (c *Controller) revokeEdgeProxy(ctx context.Context, provider string) error {
	name := edgeProxyGrant(provider)
	for _, s := range []RBACStore{c.cfg.RoleBindings, c.cfg.ClusterRoles} {
		if _, _, err := s.Delete(ctx, name, rest.ValidateAllObjectFunc, &metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("revoking edge proxy access of %s: %w", provider, err)
		}
	}
	return nil
}

// disable removes everything enabling set up in one workspace: the grants
// and every custom resource of the provider's groups.
func (c *Controller) disable(ctx context.Context, id cluster.ID, provider string) error {
	if err := c.revokeEdgeProxy(ctx, provider); err != nil {
		return err
	}
	groups := c.index.Groups(provider)
	if len(groups) == 0 || c.cfg.Etcd == nil {
		return nil
	}
	n, err := wstorage.PurgeRanges(ctx, c.cfg.Etcd, c.cfg.EtcdPrefix, func(group, _ string) []string {
		if slices.Contains(groups, group) {
			return []string{string(id) + "/"}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("purging %s resources: %w", provider, err)
	}
	klog.FromContext(ctx).V(2).Info("Provider disabled", "provider", provider, "cluster", id, "purgedKeys", n)
	return nil
}

func (c *Controller) dropFinalizer(ctx context.Context, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := c.cfg.Bindings.Get(ctx, name, &metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		b := obj.(*providersv1alpha1.ProviderBinding).DeepCopy()
		b.Finalizers = slices.DeleteFunc(b.Finalizers, func(f string) bool { return f == providersv1alpha1.BindingCleanupFinalizer })
		_, _, err = c.cfg.Bindings.Update(ctx, name, rest.DefaultUpdatedObjectInfo(b), rest.ValidateAllObjectFunc,
			rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

func (c *Controller) setStatus(ctx context.Context, name string, entry *providersv1alpha1.CatalogEntry, known bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := c.cfg.BindingsStatus.Get(ctx, name, &metav1.GetOptions{})
		if err != nil {
			return client404(err)
		}
		b := obj.(*providersv1alpha1.ProviderBinding).DeepCopy()
		before := b.Status.DeepCopy()
		set := func(t string, s metav1.ConditionStatus, reason, msg string) {
			meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: b.Generation})
		}
		if !known {
			set(providersv1alpha1.ConditionBound, metav1.ConditionFalse, "ProviderNotFound", fmt.Sprintf("provider %q is not in the catalog", b.Spec.Provider))
			set(providersv1alpha1.ConditionReady, metav1.ConditionFalse, "ProviderNotFound", "")
		} else {
			set(providersv1alpha1.ConditionBound, metav1.ConditionTrue, "Bound", fmt.Sprintf("provider %q is enabled in this workspace", b.Spec.Provider))
			if r := meta.FindStatusCondition(entry.Status.Conditions, providersv1alpha1.ConditionReady); r != nil {
				set(providersv1alpha1.ConditionReady, r.Status, r.Reason, r.Message)
			} else {
				set(providersv1alpha1.ConditionReady, metav1.ConditionUnknown, "Unknown", "")
			}
		}
		if apiequality.Semantic.DeepEqual(*before, b.Status) {
			return nil
		}
		_, _, err = c.cfg.BindingsStatus.Update(ctx, name, rest.DefaultUpdatedObjectInfo(b), rest.ValidateAllObjectFunc,
			rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
		return client404(err)
	})
}

// client404 treats a binding deleted meanwhile as done.
func client404(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
