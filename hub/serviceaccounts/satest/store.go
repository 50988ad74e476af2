// Package satest gives tests a real ServiceAccount storage: embedded etcd,
// the hub's cluster decorator and the watch cache, as the hub runs them.
package satest

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// NewStore starts an embedded etcd and returns ServiceAccount storage on
// it, ready (watch cache primed). Both stop when t ends.
func NewStore(t testing.TB) *registry.Store {
	t.Helper()
	etcd := testserver.RunEtcd(t, nil)
	s := scheme.New()
	codecs := scheme.NewCodecs(s)
	cfg := storagebackend.NewDefaultConfig("/registry", codecs.LegacyCodec(corev1.SchemeGroupVersion))
	cfg.Transport.ServerList = etcd.Endpoints()
	gr := schema.GroupResource{Resource: "serviceaccounts"}
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
	probe := Context("0000000000000000", "default")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := store.List(probe, nil); err == nil {
			return store
		} else if time.Now().After(deadline) {
			t.Fatalf("watch cache not ready: %v", err)
		}
	}
}

// Context addresses namespace ns of workspace id.
func Context(id cluster.ID, ns string) context.Context {
	return cluster.WithCluster(request.WithNamespace(context.Background(), ns), id)
}

// Create creates ServiceAccount ns/name in workspace id.
func Create(t testing.TB, store rest.Creater, id cluster.ID, ns, name string) *corev1.ServiceAccount {
	t.Helper()
	obj, err := store.Create(Context(id, ns), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating service account %s/%s: %v", ns, name, err)
	}
	return obj.(*corev1.ServiceAccount)
}

// Delete deletes ServiceAccount ns/name in workspace id.
func Delete(t testing.TB, store rest.GracefulDeleter, id cluster.ID, ns, name string) {
	t.Helper()
	if _, _, err := store.Delete(Context(id, ns), name, rest.ValidateAllObjectFunc, &metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting service account %s/%s: %v", ns, name, err)
	}
}
