package workspaces

import (
	"context"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wharfhub/wharf/hub/apis/scheme"
	tenancyv1alpha1 "github.com/wharfhub/wharf/hub/apis/tenancy/v1alpha1"
	"github.com/wharfhub/wharf/hub/cluster"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

// fixture is the Workspace storage, index and deletion controller of one
// hub over a real etcd, as the hub wires them (without the watch cache,
// which these tests do not exercise).
type fixture struct {
	rest  *REST
	index *Index
	ctrl  *Controller
	etcd  *clientv3.Client
	root  cluster.ID
	clock *clocktesting.FakeClock

	mu          sync.Mutex
	initialized map[cluster.ID]string // cluster -> creator
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	etcd := testserver.RunEtcd(t, nil)
	s := scheme.New()
	codecs := scheme.NewCodecs(s)
	cfg := storagebackend.NewDefaultConfig("/registry", codecs.LegacyCodec(tenancyv1alpha1.SchemeGroupVersion))
	cfg.Transport.ServerList = etcd.Endpoints()
	gr := schema.GroupResource{Group: tenancyv1alpha1.SchemeGroupVersion.Group, Resource: "workspaces"}
	getter := wstorage.RESTOptionsGetter{Delegate: generic.RESTOptions{StorageConfig: cfg.ForResource(gr)}}
	f := &fixture{index: NewIndex(etcd.Client, "/registry"), etcd: etcd.Client, initialized: map[cluster.ID]string{}}
	root, err := f.index.EnsureRoot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f.root = root
	r, _, err := NewREST(s, getter, f.index, "https://hub.example", func(_ context.Context, id cluster.ID, creator user.Info) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		name := ""
		if creator != nil {
			name = creator.GetName()
		}
		f.initialized[id] = name
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Destroy)
	f.rest = r
	if f.ctrl, err = NewController(r, f.index, etcd.Client, "/registry", nil); err != nil {
		t.Fatal(err)
	}
	// The purge pauses between passes; the fake clock makes that instant.
	f.clock = clocktesting.NewFakeClock(time.Now())
	f.ctrl.clock = f.clock
	return f
}

// in addresses cluster-scoped storage of id as user bob.
func in(id cluster.ID) context.Context {
	ctx := request.WithUser(context.Background(), &user.DefaultInfo{Name: "bob"})
	return request.WithNamespace(cluster.WithCluster(ctx, id), metav1.NamespaceNone)
}

func (f *fixture) create(t *testing.T, parent cluster.ID, name string) *tenancyv1alpha1.Workspace {
	t.Helper()
	out, err := f.rest.Create(in(parent), &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: name}}, nil, &metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return out.(*tenancyv1alpha1.Workspace)
}

func (f *fixture) get(t *testing.T, parent cluster.ID, name string) (*tenancyv1alpha1.Workspace, error) {
	t.Helper()
	out, err := f.rest.Get(in(parent), name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return out.(*tenancyv1alpha1.Workspace), nil
}

// tamper rewrites a Workspace's status as the hub's own store would, the
// way an attacker who could write status (or etcd) would leave it.
func (f *fixture) tamper(t *testing.T, parent cluster.ID, name string, st tenancyv1alpha1.WorkspaceStatus) {
	t.Helper()
	if err := f.rest.hubUpdate(in(parent), name, func(w *tenancyv1alpha1.Workspace) { w.Status = st }); err != nil {
		t.Fatalf("tamper %s: %v", name, err)
	}
}

// recorded reports whether the index holds path, read from etcd.
func (f *fixture) recorded(t *testing.T, path cluster.Path) bool {
	t.Helper()
	_, err := f.index.Lookup(context.Background(), path)
	if err != nil && err != ErrNotFound {
		t.Fatal(err)
	}
	return err == nil
}

// finishChildren runs the deletion of every pending child Workspace stored
// in parent, as the controller's queue does for each child's own key.
func (f *fixture) finishChildren(t *testing.T, parent cluster.ID) {
	t.Helper()
	obj, err := f.rest.Store.List(in(parent), &metainternalversion.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range obj.(*tenancyv1alpha1.WorkspaceList).Items {
		child := &obj.(*tenancyv1alpha1.WorkspaceList).Items[i]
		if child.DeletionTimestamp == nil {
			continue
		}
		if _, err := f.ctrl.finish(context.Background(), child); err != nil {
			t.Fatalf("finishing child %s: %v", child.Name, err)
		}
	}
}
