package rbac

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/wharfhub/wharf/hub/cluster"
)

// fakeStore stands in for a registry store: it refuses calls without a
// wildcard context, as the hub's storage would not list every cluster
// otherwise, and wraps watch objects the way the watch cache does.
type fakeStore struct {
	items []rbacv1.ClusterRoleBinding
	w     *watch.RaceFreeFakeWatcher
}

var errNotWildcard = errors.New("not a wildcard context")

func (s *fakeStore) NewList() runtime.Object { return &rbacv1.ClusterRoleBindingList{} }

func (s *fakeStore) List(ctx context.Context, _ *metainternalversion.ListOptions) (runtime.Object, error) {
	if !cluster.IsWildcard(ctx) {
		return nil, errNotWildcard
	}
	return &rbacv1.ClusterRoleBindingList{Items: s.items}, nil
}

func (s *fakeStore) Watch(ctx context.Context, _ *metainternalversion.ListOptions) (watch.Interface, error) {
	if !cluster.IsWildcard(ctx) {
		return nil, errNotWildcard
	}
	return s.w, nil
}

func (s *fakeStore) ConvertToTable(context.Context, runtime.Object, runtime.Object) (*metav1.Table, error) {
	return nil, errors.New("not used")
}

// cachingObject mimics the watch cache's serialization-caching wrapper.
type cachingObject struct{ runtime.Object }

func (c cachingObject) CacheEncode(runtime.Identifier, func(runtime.Object, io.Writer) error, io.Writer) error {
	return nil
}
func (c cachingObject) GetObject() runtime.Object { return c.Object }

// TestStorageListWatch runs the authorizer over StorageListWatch adapters.
func TestStorageListWatch(t *testing.T) {
	empty := func() *fakeStore { return &fakeStore{w: watch.NewRaceFreeFake()} }
	crbs := &fakeStore{
		items: []rbacv1.ClusterRoleBinding{*annotated(clusterA, newClusterRoleBinding("b", "view", "User:alice"))},
		w:     watch.NewRaceFreeFake(),
	}
	crs := &crStore{fakeStore: empty(), items: []rbacv1.ClusterRole{*annotated(clusterA, newClusterRole("view", rule("get", "", "pods", "")))}}

	a, err := New(Sources{
		Roles:               StorageListWatch(&typed[rbacv1.RoleList]{empty()}),
		RoleBindings:        StorageListWatch(&typed[rbacv1.RoleBindingList]{empty()}),
		ClusterRoles:        StorageListWatch(crs),
		ClusterRoleBindings: StorageListWatch(crbs),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { a.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	if !a.WaitForSync(ctx) {
		t.Fatal("not synced")
	}
	allowed := func(who string) bool {
		d, _, _ := a.Authorize(in(clusterA), res(usr(who), "get", "", "pods", "", "ns", "p"))
		return d == authorizer.DecisionAllow
	}
	if !allowed("alice") {
		t.Fatal("listed binding not effective")
	}
	crbs.w.Add(cachingObject{annotated(clusterA, newClusterRoleBinding("c", "view", "User:carol"))})
	eventually(t, "watched binding through a caching wrapper", func() bool { return allowed("carol") })
}

// typed gives fakeStore another list type, for the resources left empty.
type typed[L any] struct{ *fakeStore }

func (s *typed[L]) NewList() runtime.Object { return any(new(L)).(runtime.Object) }

func (s *typed[L]) List(ctx context.Context, _ *metainternalversion.ListOptions) (runtime.Object, error) {
	if !cluster.IsWildcard(ctx) {
		return nil, errNotWildcard
	}
	return s.NewList(), nil
}

// crStore serves ClusterRoles.
type crStore struct {
	*fakeStore
	items []rbacv1.ClusterRole
}

func (s *crStore) NewList() runtime.Object { return &rbacv1.ClusterRoleList{} }

func (s *crStore) List(ctx context.Context, _ *metainternalversion.ListOptions) (runtime.Object, error) {
	if !cluster.IsWildcard(ctx) {
		return nil, errNotWildcard
	}
	return &rbacv1.ClusterRoleList{Items: s.items}, nil
}
