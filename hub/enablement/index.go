package enablement

import (
	"context"
	"fmt"
	"slices"
	"time"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/tools/cache"

	providersv1alpha1 "github.com/wharfhub/wharf/hub/apis/providers/v1alpha1"
	"github.com/wharfhub/wharf/hub/catalog"
	"github.com/wharfhub/wharf/hub/cluster"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

const (
	byClusterProvider = "clusterProvider"
	byGroup           = "group"
)

// Index answers enablement questions from informers.
type Index struct {
	bindings cache.SharedIndexInformer
	entries  cache.SharedIndexInformer
	root     cluster.ID
}

// NewIndex builds the informers over binding storage (every workspace) and
// catalog entry storage (root's logical cluster only: the catalog is
// hub-wide state, and an entry anywhere else is written by a tenant).
func NewIndex(bindings, entries wstorage.ListWatcher, root cluster.ID) (*Index, error) {
	b, err := wstorage.NewClusterInformer(bindings, &providersv1alpha1.ProviderBinding{}, 10*time.Minute)
	if err != nil {
		return nil, err
	}
	if err := b.AddIndexers(cache.Indexers{byClusterProvider: func(obj interface{}) ([]string, error) {
		pb := obj.(*providersv1alpha1.ProviderBinding)
		id, _ := wstorage.SplitClusterNamespace(pb)
		return []string{clusterProvider(id, pb.Spec.Provider)}, nil
	}}); err != nil {
		return nil, fmt.Errorf("binding indexer: %w", err)
	}
	e := cache.NewSharedIndexInformer(clusterListWatch(entries, root), &providersv1alpha1.CatalogEntry{}, 10*time.Minute, cache.Indexers{})
	if err := e.SetTransform(wstorage.KeyByCluster); err != nil {
		return nil, fmt.Errorf("catalog informer transform: %w", err)
	}
	x := &Index{bindings: b, entries: e, root: root}
	if err := e.AddIndexers(cache.Indexers{byGroup: x.claims}); err != nil {
		return nil, fmt.Errorf("catalog indexer: %w", err)
	}
	return x, nil
}

// inRoot reports whether an entry of the informer was stored in root, by
// the cluster the hub's storage recorded (KeyByCluster reads the
// annotation the storage decorator overwrites on every write). The informer
// lists root only; this is the second line, should that ever change.
func (x *Index) inRoot(e *providersv1alpha1.CatalogEntry) bool {
	id, _ := wstorage.SplitClusterNamespace(e)
	return id == x.root
}

// claims indexes an entry by the groups it may own: none outside root,
// never a reserved group, and a shipped provider's group only for that
// provider (catalog.MayOwn; the catalog storage refuses the rest, and an
// entry stored before that rule must not switch a built-in API off or
// take a shipped provider's group either).
func (x *Index) claims(obj interface{}) ([]string, error) {
	e := obj.(*providersv1alpha1.CatalogEntry)
	if !x.inRoot(e) {
		return nil, nil
	}
	var groups []string
	for _, a := range e.Spec.APIs {
		if catalog.MayOwn(e.Name, a.Group) {
			groups = append(groups, a.Group)
		}
	}
	return groups, nil
}

// clusterListWatch lists and watches one logical cluster of a storage,
// as the hub itself (no user: storage does no authorization).
func clusterListWatch(s wstorage.ListWatcher, id cluster.ID) cache.ListerWatcher {
	in := func(ctx context.Context) context.Context {
		return request.WithNamespace(cluster.WithCluster(ctx, id), metav1.NamespaceNone)
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return s.List(in(ctx), internalListOptions(opts))
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			w, err := s.Watch(in(ctx), internalListOptions(opts))
			if err != nil {
				return nil, err
			}
			// The watch cache hands out shared cacheable wrappers; the
			// informer needs the object itself.
			return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
				if co, ok := e.Object.(runtime.CacheableObject); ok {
					e.Object = co.GetObject()
				}
				return e, true
			}), nil
		},
	}
}

func internalListOptions(opts metav1.ListOptions) *metainternalversion.ListOptions {
	out := &metainternalversion.ListOptions{}
	_ = metainternalversion.Convert_v1_ListOptions_To_internalversion_ListOptions(&opts, out, nil)
	return out
}

func clusterProvider(id cluster.ID, provider string) string { return string(id) + "/" + provider }

// Bindings is the binding informer; the Controller runs it.
func (x *Index) Bindings() cache.SharedIndexInformer { return x.bindings }

// RunEntries runs the catalog entry informer until ctx is done.
func (x *Index) RunEntries(ctx context.Context) { x.entries.RunWithContext(ctx) }

// HasSynced reports whether both informers have listed everything.
func (x *Index) HasSynced() bool { return x.bindings.HasSynced() && x.entries.HasSynced() }

// Enabled reports whether cluster id holds a live (not deleting) binding
// for provider.
func (x *Index) Enabled(id cluster.ID, provider string) bool {
	objs, err := x.bindings.GetIndexer().ByIndex(byClusterProvider, clusterProvider(id, provider))
	if err != nil {
		return false
	}
	for _, o := range objs {
		if o.(*providersv1alpha1.ProviderBinding).DeletionTimestamp == nil {
			return true
		}
	}
	return false
}

// ProviderOfGroup returns the provider that owns an API group. When
// several manifests claim a group, the provider listed first in the
// catalog (oldest entry, then name) owns it, as it installed the CRDs
// first; the others get nothing of it.
func (x *Index) ProviderOfGroup(group string) (string, bool) {
	if group == "" {
		return "", false
	}
	objs, err := x.entries.GetIndexer().ByIndex(byGroup, group)
	if err != nil || len(objs) == 0 {
		return "", false
	}
	owner := objs[0].(*providersv1alpha1.CatalogEntry)
	for _, o := range objs[1:] {
		e := o.(*providersv1alpha1.CatalogEntry)
		if e.CreationTimestamp.Before(&owner.CreationTimestamp) ||
			(e.CreationTimestamp.Equal(&owner.CreationTimestamp) && e.Name < owner.Name) {
			owner = e
		}
	}
	return owner.Name, true
}

// Entry returns a provider's catalog entry.
func (x *Index) Entry(provider string) (*providersv1alpha1.CatalogEntry, bool) {
	for _, o := range x.entries.GetStore().List() {
		if e := o.(*providersv1alpha1.CatalogEntry); e.Name == provider && x.inRoot(e) {
			return e, true
		}
	}
	return nil, false
}

// Groups returns the API groups a provider owns: those its manifest
// claims and no earlier provider does, so a manifest cannot claim its way
// into another provider's data.
func (x *Index) Groups(provider string) []string {
	e, ok := x.Entry(provider)
	if !ok {
		return nil
	}
	var out []string
	for _, a := range e.Spec.APIs {
		if owner, _ := x.ProviderOfGroup(a.Group); owner == provider && !slices.Contains(out, a.Group) {
			out = append(out, a.Group)
		}
	}
	return out
}
