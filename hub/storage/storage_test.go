package storage_test

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	"github.com/wharfhub/wharf/hub/apis/scheme"
	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/registry"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

const (
	clusterA = cluster.ID("aaaaaaaaaaaaaaaa")
	clusterB = cluster.ID("bbbbbbbbbbbbbbbb")
)

// newConfigMapStore runs a real embedded etcd and the real watch cache below
// the cluster decorator, as the hub does.
func newConfigMapStore(t testing.TB) (*registry.Store, *clientv3.Client) {
	t.Helper()
	etcd := testserver.RunEtcd(t, nil)
	return newConfigMapStoreOn(t, etcd.Endpoints()), etcd.Client
}

func newConfigMapStoreOn(t testing.TB, endpoints []string) *registry.Store {
	return newStoreOn(t, endpoints, "configmaps")
}

func newStoreOn(t testing.TB, endpoints []string, resource string) *registry.Store {
	t.Helper()
	s := scheme.New()
	codecs := scheme.NewCodecs(s)
	cfg := storagebackend.NewDefaultConfig("/registry", codecs.LegacyCodec(corev1.SchemeGroupVersion))
	cfg.Transport.ServerList = endpoints
	gr := schema.GroupResource{Resource: resource}
	getter := wstorage.RESTOptionsGetter{Delegate: generic.RESTOptions{
		StorageConfig: cfg.ForResource(gr),
		Decorator:     genericregistry.StorageWithCacher(),
	}}
	var kind *registry.Kind
	for _, k := range registry.BuiltinKinds()[corev1.SchemeGroupVersion] {
		if k.Resource == gr {
			kind = k
		}
	}
	store, err := registry.NewStore(s, getter, kind)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.DestroyFunc)
	// The watch cache answers "(re)initializing" until its first list is
	// in; a list may be served from etcd before, so a watch is the test.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		ctx := cluster.WithCluster(request.WithNamespace(context.Background(), ""), clusterA)
		_, err := store.List(ctx, nil)
		if err == nil {
			var w watch.Interface
			if w, err = store.Watch(ctx, &metainternalversion.ListOptions{}); err == nil {
				w.Stop()
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("watch cache not ready: %v", err)
		}
	}
	return store
}

func ctxFor(id cluster.ID) context.Context {
	ctx := request.WithNamespace(context.Background(), "default")
	if id != "" {
		ctx = cluster.WithCluster(ctx, id)
	}
	return ctx
}

func configMap(name, value, forgedCluster string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: map[string]string{"v": value}}
	if forgedCluster != "" {
		cm.Annotations = map[string]string{wstorage.ClusterAnnotation: forgedCluster}
	}
	return cm
}

func TestIsolationAndKeys(t *testing.T) {
	store, etcd := newConfigMapStore(t)

	// Same name in two clusters, the second one forging the first's id.
	for _, c := range []struct {
		id     cluster.ID
		value  string
		forged string
	}{{clusterA, "from-a", ""}, {clusterB, "from-b", string(clusterA)}} {
		if _, err := store.Create(ctxFor(c.id), configMap("same", c.value, c.forged), rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
			t.Fatalf("create in %s: %v", c.id, err)
		}
	}

	for _, c := range []struct {
		id    cluster.ID
		value string
	}{{clusterA, "from-a"}, {clusterB, "from-b"}} {
		obj, err := store.Get(ctxFor(c.id), "same", &metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get in %s: %v", c.id, err)
		}
		cm := obj.(*corev1.ConfigMap)
		if cm.Data["v"] != c.value || cm.Annotations[wstorage.ClusterAnnotation] != string(c.id) {
			t.Errorf("cluster %s read %v / %v", c.id, cm.Data, cm.Annotations)
		}
		list, err := store.List(ctxFor(c.id), nil)
		if err != nil {
			t.Fatal(err)
		}
		if items := list.(*corev1.ConfigMapList).Items; len(items) != 1 || items[0].Data["v"] != c.value {
			t.Errorf("list in %s = %+v", c.id, items)
		}
	}

	// A forged annotation on update is overwritten too.
	obj, _ := store.Get(ctxFor(clusterB), "same", &metav1.GetOptions{})
	cm := obj.(*corev1.ConfigMap).DeepCopy()
	cm.Annotations[wstorage.ClusterAnnotation] = string(clusterA)
	updated, _, err := store.Update(ctxFor(clusterB), "same", rest.DefaultUpdatedObjectInfo(cm), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := updated.(*corev1.ConfigMap).Annotations[wstorage.ClusterAnnotation]; got != string(clusterB) {
		t.Errorf("update kept forged annotation %q", got)
	}

	resp, err := etcd.Get(context.Background(), "/registry/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range resp.Kvs {
		keys = append(keys, string(kv.Key))
	}
	sort.Strings(keys)
	want := []string{
		"/registry/core/configmaps/" + string(clusterA) + "/default/same",
		"/registry/core/configmaps/" + string(clusterB) + "/default/same",
	}
	if strings.Join(keys, ",") != strings.Join(want, ",") {
		t.Errorf("etcd keys = %v, want %v", keys, want)
	}

	// Wildcard list sees both, each carrying its cluster.
	wctx := cluster.WithWildcard(context.Background())
	list, err := store.List(wctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, item := range list.(*corev1.ConfigMapList).Items {
		got[item.Annotations[wstorage.ClusterAnnotation]] = item.Data["v"]
	}
	if got[string(clusterA)] != "from-a" || got[string(clusterB)] != "from-b" || len(got) != 2 {
		t.Errorf("wildcard list = %v", got)
	}
}

func TestFailClosed(t *testing.T) {
	store, _ := newConfigMapStore(t)
	noCluster := ctxFor("")
	wildcard := cluster.WithWildcard(request.WithNamespace(context.Background(), "default"))
	wildcardAll := cluster.WithWildcard(context.Background())

	tests := []struct {
		name string
		call func() error
	}{
		{"create without cluster", func() error {
			_, err := store.Create(noCluster, configMap("x", "v", ""), nil, &metav1.CreateOptions{})
			return err
		}},
		{"get without cluster", func() error { _, err := store.Get(noCluster, "x", &metav1.GetOptions{}); return err }},
		{"list without cluster", func() error { _, err := store.List(noCluster, nil); return err }},
		{"watch without cluster", func() error { _, err := store.Watch(noCluster, &metainternalversion.ListOptions{}); return err }},
		{"delete without cluster", func() error {
			_, _, err := store.Delete(noCluster, "x", nil, &metav1.DeleteOptions{})
			return err
		}},
		{"wildcard create", func() error {
			_, err := store.Create(wildcard, configMap("x", "v", ""), nil, &metav1.CreateOptions{})
			return err
		}},
		{"wildcard get", func() error { _, err := store.Get(wildcard, "x", &metav1.GetOptions{}); return err }},
		{"wildcard namespaced list", func() error { _, err := store.List(wildcard, nil); return err }},
		{"wildcard namespaced watch", func() error { _, err := store.Watch(wildcard, &metainternalversion.ListOptions{}); return err }},
		{"wildcard delete", func() error {
			_, _, err := store.Delete(wildcardAll, "x", nil, &metav1.DeleteOptions{})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); err == nil {
				t.Fatal("expected an error, got none")
			}
		})
	}
}

func TestWatchIsolation(t *testing.T) {
	store, _ := newConfigMapStore(t)
	w, err := store.Watch(ctxFor(clusterA), &metainternalversion.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, id := range []cluster.ID{clusterB, clusterA} {
		if _, err := store.Create(ctxFor(id), configMap("w", string(id), ""), nil, &metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// B's event was written first; if isolation leaked, it would arrive first.
	select {
	case ev := <-w.ResultChan():
		obj := ev.Object
		if co, ok := obj.(runtime.CacheableObject); ok {
			obj = co.GetObject()
		}
		cm, ok := obj.(*corev1.ConfigMap)
		if ev.Type != watch.Added || !ok || cm.Data["v"] != string(clusterA) {
			t.Fatalf("first event = %s %+v", ev.Type, ev.Object)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event within 30s")
	}
	select {
	case ev := <-w.ResultChan():
		t.Fatalf("unexpected second event %s %+v", ev.Type, ev.Object)
	case <-time.After(500 * time.Millisecond):
	}
}

// TestCacheRebuildKeepsSameNames restarts the watch cache over existing data:
// objects of the same name in two clusters must both come back.
func TestCacheRebuildKeepsSameNames(t *testing.T) {
	store, etcd := newConfigMapStore(t)
	for _, id := range []cluster.ID{clusterA, clusterB} {
		if _, err := store.Create(ctxFor(id), configMap("same", string(id), ""), nil, &metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	store2 := newConfigMapStoreOn(t, etcd.Endpoints())
	for _, id := range []cluster.ID{clusterA, clusterB} {
		list, err := store2.List(ctxFor(id), nil)
		if err != nil {
			t.Fatal(err)
		}
		if items := list.(*corev1.ConfigMapList).Items; len(items) != 1 || items[0].Data["v"] != string(id) {
			t.Errorf("after rebuild, cluster %s lists %+v", id, items)
		}
	}
}

func TestCacheRebuildClusterScoped(t *testing.T) {
	etcd := testserver.RunEtcd(t, nil)
	store := newStoreOn(t, etcd.Endpoints(), "namespaces")
	ctx := func(id cluster.ID) context.Context {
		return cluster.WithCluster(request.WithNamespace(context.Background(), ""), id)
	}
	for _, id := range []cluster.ID{clusterA, clusterB} {
		if _, err := store.Create(ctx(id), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, nil, &metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	store2 := newStoreOn(t, etcd.Endpoints(), "namespaces")
	for _, id := range []cluster.ID{clusterA, clusterB} {
		list, err := store2.List(ctx(id), nil)
		if err != nil {
			t.Fatal(err)
		}
		if items := list.(*corev1.NamespaceList).Items; len(items) != 1 || items[0].Annotations[wstorage.ClusterAnnotation] != string(id) {
			t.Errorf("after rebuild, cluster %s lists %+v", id, items)
		}
	}
}
