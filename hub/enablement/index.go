package enablement

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/client-go/tools/cache"

	providersv1alpha1 "github.com/wharfhub/wharf/hub/apis/providers/v1alpha1"
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
}

// NewIndex builds the informers over binding and catalog entry storage.
func NewIndex(bindings, entries wstorage.ListWatcher) (*Index, error) {
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
	e, err := wstorage.NewClusterInformer(entries, &providersv1alpha1.CatalogEntry{}, 10*time.Minute)
	if err != nil {
		return nil, err
	}
	if err := e.AddIndexers(cache.Indexers{byGroup: func(obj interface{}) ([]string, error) {
		var groups []string
		for _, a := range obj.(*providersv1alpha1.CatalogEntry).Spec.APIs {
			groups = append(groups, a.Group)
		}
		return groups, nil
	}}); err != nil {
		return nil, fmt.Errorf("catalog indexer: %w", err)
	}
	return &Index{bindings: b, entries: e}, nil
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
		if e := o.(*providersv1alpha1.CatalogEntry); e.Name == provider {
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
