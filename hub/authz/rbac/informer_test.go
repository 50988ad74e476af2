package rbac

import (
	"context"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/tools/cache"

	"github.com/wharfhub/wharf/hub/cluster"
)

// fakeSource is an in-memory ListerWatcher: a fixed initial list, then
// whatever the test sends on the watcher.
func fakeSource(list runtime.Object) (cache.ListerWatcher, *watch.RaceFreeFakeWatcher) {
	w := watch.NewRaceFreeFake()
	return plainListWatch{&cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return list.DeepCopyObject(), nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return w, nil
		},
	}}, w
}

func annotated[T interface{ SetAnnotations(map[string]string) }](id cluster.ID, obj T) T {
	if id != "" {
		obj.SetAnnotations(objMeta(id, "", "").Annotations)
	}
	return obj
}

// eventually polls cond until it holds; the generous ceiling only bounds a
// broken test, nothing asserts on timing.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("never happened: %s", what)
	}
}

// TestInformers feeds the authorizer through real informers. Both clusters
// hold objects with identical names, which an informer keyed by
// namespace/name alone would conflate.
func TestInformers(t *testing.T) {
	admin := func(id cluster.ID, verbs string) *rbacv1.ClusterRole {
		return annotated(id, newClusterRole("admin", rule(verbs, "", "configmaps", "")))
	}
	bind := func(id cluster.ID, subs ...string) *rbacv1.RoleBinding {
		return annotated(id, newRoleBinding("ns1", "b", "ClusterRole:admin", subs...))
	}
	rolesLW, _ := fakeSource(&rbacv1.RoleList{})
	crLW, _ := fakeSource(&rbacv1.ClusterRoleList{Items: []rbacv1.ClusterRole{
		*admin(clusterA, "get"), *admin(clusterB, "get,delete"),
	}})
	rbLW, rbW := fakeSource(&rbacv1.RoleBindingList{Items: []rbacv1.RoleBinding{
		*bind(clusterA, "User:alice"), *bind(clusterB, "User:bob"),
		// No cluster annotation: must grant nothing anywhere.
		*annotated("", newRoleBinding("ns1", "stray", "ClusterRole:admin", "User:mallory")),
	}})
	crbLW, crbW := fakeSource(&rbacv1.ClusterRoleBindingList{})

	if _, err := New(Sources{Roles: rolesLW}); err == nil {
		t.Fatal("New without all sources should fail")
	}
	a, err := New(Sources{Roles: rolesLW, RoleBindings: rbLW, ClusterRoles: crLW, ClusterRoleBindings: crbLW})
	if err != nil {
		t.Fatal(err)
	}
	allowed := func(id cluster.ID, who, verb string) bool {
		d, _, _ := a.Authorize(in(id), res(usr(who), verb, "", "configmaps", "", "ns1", "c"))
		return d == authorizer.DecisionAllow
	}
	if a.HasSynced() || allowed(clusterA, "alice", "get") {
		t.Fatal("before Run: want not synced and no grants")
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	if !a.WaitForSync(ctx) {
		t.Fatal("informers did not sync")
	}

	for _, c := range []struct {
		id        cluster.ID
		who, verb string
		want      bool
	}{
		{clusterA, "alice", "get", true},
		{clusterA, "alice", "delete", false}, // A's admin is narrower than B's
		{clusterB, "alice", "get", false},
		{clusterB, "bob", "delete", true},
		{clusterA, "bob", "get", false},
		{clusterA, "mallory", "get", false},
		{clusterB, "mallory", "get", false},
	} {
		if got := allowed(c.id, c.who, c.verb); got != c.want {
			t.Errorf("after sync: %s %s in %s = %v, want %v", c.who, c.verb, c.id, got, c.want)
		}
	}

	// Same namespace/name in B changes: A's binding must survive.
	sent := bind(clusterB, "User:bob", "User:alice")
	rbW.Modify(sent)
	eventually(t, "alice gains delete in B", func() bool { return allowed(clusterB, "alice", "delete") })
	if !allowed(clusterA, "alice", "get") {
		t.Error("updating B's binding revoked A's binding of the same name")
	}
	if sent.Namespace != "ns1" {
		t.Errorf("informer transform mutated the sender's object: namespace %q", sent.Namespace)
	}

	rbW.Delete(bind(clusterA, "User:alice"))
	eventually(t, "alice loses A", func() bool { return !allowed(clusterA, "alice", "get") })
	if !allowed(clusterB, "alice", "delete") {
		t.Error("deleting A's binding revoked B's binding of the same name")
	}

	crbW.Add(annotated(clusterA, newClusterRoleBinding("carol", "admin", "User:carol")))
	eventually(t, "carol gains A", func() bool { return allowed(clusterA, "carol", "get") })
	if allowed(clusterB, "carol", "get") {
		t.Error("a ClusterRoleBinding in A granted in B")
	}
	crbW.Delete(annotated(clusterA, newClusterRoleBinding("carol", "admin", "User:carol")))
	eventually(t, "carol loses A", func() bool { return !allowed(clusterA, "carol", "get") })
	if n := a.idx.size(); n != 2 {
		t.Errorf("index holds %d clusters, want 2", n)
	}
}

// TestIndexDropsEmptyClusters checks a workspace whose RBAC objects are all
// gone leaves nothing behind in the index.
func TestIndexDropsEmptyClusters(t *testing.T) {
	a := newAuthorizer()
	escalationPolicy().load(a, clusterA)
	p := escalationPolicy()
	p.load(a, clusterB)
	a.idx.update(clusterB, func(ci *clusterIndex) {
		for _, r := range p.roles {
			ci.deleteRole(r.Namespace, r.Name)
		}
		for _, r := range p.clusterRoles {
			ci.deleteClusterRole(r.Name)
		}
		for _, b := range p.roleBindings {
			ci.deleteRoleBinding(b.Namespace, b.Name)
		}
		for _, b := range p.clusterRoleBindings {
			ci.deleteClusterRoleBinding(b.Name)
		}
		if len(ci.rbBySubject) != 0 || len(ci.crbBySubject) != 0 {
			t.Errorf("subject index not emptied: %d, %d", len(ci.rbBySubject), len(ci.crbBySubject))
		}
	})
	if n := a.idx.size(); n != 1 {
		t.Errorf("index holds %d clusters, want 1", n)
	}
}
