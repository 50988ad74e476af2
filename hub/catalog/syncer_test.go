package catalog

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	providersv1alpha1 "github.com/wharfhub/wharf/hub/apis/providers/v1alpha1"
	"github.com/wharfhub/wharf/hub/apis/scheme"
	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/plugins"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

const root = cluster.ID("0000000000000000")

// optsGetter stores through the hub's cluster decorator and watch cache on
// a real etcd, as one hub replica does.
type optsGetter struct{ endpoints []string }

func (g optsGetter) GetRESTOptions(gr schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	s := scheme.New()
	cfg := storagebackend.NewDefaultConfig("/registry", scheme.NewCodecs(s).LegacyCodec(providersv1alpha1.SchemeGroupVersion))
	cfg.Transport.ServerList = g.endpoints
	return wstorage.RESTOptionsGetter{Delegate: generic.RESTOptions{
		StorageConfig: cfg.ForResource(gr), Decorator: genericregistry.StorageWithCacher(), ResourcePrefix: gr.Group + "/" + gr.Resource,
	}}.GetRESTOptions(gr, example)
}

func newTestStorage(t *testing.T, endpoints []string) *Storage {
	t.Helper()
	st, err := NewStorage(scheme.New(), optsGetter{endpoints}, root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Entries.DestroyFunc)
	t.Cleanup(st.Bindings.DestroyFunc)
	ctx := cluster.WithCluster(request.WithNamespace(context.Background(), ""), root)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := st.Entries.List(ctx, nil); err == nil {
			return st
		} else if time.Now().After(deadline) {
			t.Fatalf("watch cache not ready: %v", err)
		}
	}
}

// staticHost reports fixed statuses: the syncer's input, not its result.
type staticHost struct{ status []plugins.Status }

func (h staticHost) List() []plugins.Status                    { return h.status }
func (h staticHost) Subscribe(context.Context) <-chan struct{} { return nil }

// TestReplicasShareAnEntry: two hub replicas with their own storage on one
// etcd write the same entry concurrently; neither loses the other's
// element, the aggregate covers both, and a stale element is dropped.
func TestReplicasShareAnEntry(t *testing.T) {
	etcd := testserver.RunEtcd(t, nil)
	ep := etcd.Endpoints()
	now := time.Now()
	r1 := NewSyncer(staticHost{[]plugins.Status{{Name: "p", State: plugins.StateRunning, Restarts: 2, Pid: 42, Since: now}}}, newTestStorage(t, ep), nil, "r1")
	r2 := NewSyncer(staticHost{[]plugins.Status{{Name: "p", State: plugins.StateRestarting, Restarts: 1, LastError: "boom", Since: now}}}, newTestStorage(t, ep), nil, "r2")
	ctx := context.Background()

	var both sync.WaitGroup
	for _, s := range []*Syncer{r1, r2} {
		both.Go(func() {
			for i := 0; i < 10; i++ {
				s.now = func() time.Time { return now.Add(time.Duration(i) * time.Second) }
				s.written = map[string]time.Time{} // force a write each time
				if err := s.syncAll(ctx); err != nil {
					t.Error(err)
				}
			}
		})
	}
	both.Wait()

	e := get(t, r1)
	if len(e.Status.Replicas) != 2 || e.Status.RestartCount != 3 || e.Status.HubReplica != "r1" || e.Status.LastError != "boom" {
		t.Fatalf("status = %+v", e.Status)
	}
	if !meta.IsStatusConditionTrue(e.Status.Conditions, providersv1alpha1.ConditionReady) ||
		!meta.IsStatusConditionTrue(e.Status.Conditions, providersv1alpha1.ConditionDegraded) {
		t.Errorf("conditions = %+v", e.Status.Conditions)
	}
	if e.Status.Replicas[0].Pid != 42 {
		t.Errorf("r1 element = %+v", e.Status.Replicas[0])
	}

	// r2 goes silent; r1's next heartbeat after the stale period drops it.
	r1.now = func() time.Time { return now.Add(2 * Stale) }
	r1.written = map[string]time.Time{}
	if err := r1.syncAll(ctx); err != nil {
		t.Fatal(err)
	}
	e = get(t, r1)
	if len(e.Status.Replicas) != 1 || e.Status.Replicas[0].Name != "r1" || e.Status.RestartCount != 2 ||
		meta.IsStatusConditionTrue(e.Status.Conditions, providersv1alpha1.ConditionDegraded) {
		t.Errorf("after r2 went stale: %+v", e.Status)
	}
}

func get(t *testing.T, s *Syncer) *providersv1alpha1.CatalogEntry {
	t.Helper()
	obj, err := s.storage.Entries.Get(s.rootContext(context.Background()), "p", &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return obj.(*providersv1alpha1.CatalogEntry)
}

// TestForgetsRemovedProviders: an entry no replica reports on any more
// stays, not Ready and with no replica, once its last element goes stale
// (it keeps the provider's groups behind bindings); one another replica
// still reports on only loses this replica's element.
func TestForgetsRemovedProviders(t *testing.T) {
	etcd := testserver.RunEtcd(t, nil)
	st := newTestStorage(t, etcd.Endpoints())
	now := time.Now()
	ctx := context.Background()
	running := plugins.Status{Name: "p", State: plugins.StateRunning, Since: now}
	r1 := NewSyncer(staticHost{[]plugins.Status{running}}, st, nil, "r1")
	r2 := NewSyncer(staticHost{[]plugins.Status{running, {Name: "q", State: plugins.StateRunning, Since: now}}}, st, nil, "r2")
	for _, s := range []*Syncer{r1, r2} {
		if err := s.syncAll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// r2 restarts without p or q configured.
	r2.host = staticHost{}
	if err := r2.syncAll(ctx); err != nil {
		t.Fatal(err)
	}
	if e := get(t, r1); len(e.Status.Replicas) != 1 || e.Status.Replicas[0].Name != "r1" {
		t.Errorf("p replicas = %+v", e.Status.Replicas)
	}
	unloaded := func(name string) {
		t.Helper()
		obj, err := st.Entries.Get(r1.rootContext(ctx), name, &metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s left the catalog: %v", name, err)
		}
		e := obj.(*providersv1alpha1.CatalogEntry)
		if len(e.Status.Replicas) != 0 || meta.IsStatusConditionTrue(e.Status.Conditions, providersv1alpha1.ConditionReady) {
			t.Errorf("%s: replicas %+v, conditions %+v; want none and not Ready", name, e.Status.Replicas, e.Status.Conditions)
		}
	}
	unloaded("q")
	// r1 stops reporting p; after the stale period r2 removes it.
	r2.now = func() time.Time { return now.Add(2 * Stale) }
	if err := r2.syncAll(ctx); err != nil {
		t.Fatal(err)
	}
	unloaded("p")
}
