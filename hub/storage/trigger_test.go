package storage_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/wharfhub/wharf/hub/cluster"
)

// Watches are indexed by cluster in the watch cache (trigger.go). What a
// watch receives must not change: a workspace's watch, with or without
// selectors, gets exactly its workspace's events, in order, and a
// watch across every cluster (the hub's informers) gets all of them.
// Each step's writes in cluster B come before cluster A's, so a leak
// would show as a B event in an A watch's sequence.
func TestWatchByClusterReceivesTheSameEvents(t *testing.T) {
	store, _ := newConfigMapStore(t)
	labelled := func(name, id, app string) *corev1.ConfigMap {
		cm := configMap(name, id, "")
		if app != "" {
			cm.Labels = map[string]string{"app": app}
		}
		return cm
	}
	open := func(ctx context.Context, opts *metainternalversion.ListOptions) watch.Interface {
		t.Helper()
		w, err := store.Watch(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		return w
	}
	all := cluster.WithWildcard(request.WithNamespace(context.Background(), ""))
	watches := []struct {
		name string
		w    watch.Interface
		want []string
	}{
		{"A default", open(ctxFor(clusterA), &metainternalversion.ListOptions{}),
			[]string{"ADDED a/n1", "ADDED a/n2", "ADDED a/n3", "MODIFIED a/n1"}},
		{"A app=x", open(ctxFor(clusterA), &metainternalversion.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{"app": "x"})}),
			[]string{"ADDED a/n1", "ADDED a/n3", "MODIFIED a/n1"}},
		{"A metadata.name=n1", open(ctxFor(clusterA), &metainternalversion.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "n1")}),
			[]string{"ADDED a/n1", "MODIFIED a/n1"}},
		{"A all namespaces", open(cluster.WithCluster(request.WithNamespace(context.Background(), ""), clusterA), &metainternalversion.ListOptions{}),
			[]string{"ADDED a/n1", "ADDED a/n2", "ADDED a/n3", "MODIFIED a/n1"}},
		{"every cluster", open(all, &metainternalversion.ListOptions{}),
			[]string{"ADDED b/n1", "ADDED a/n1", "ADDED b/n2", "ADDED a/n2", "ADDED b/n3", "ADDED a/n3", "MODIFIED b/n1", "MODIFIED a/n1"}},
	}
	create := func(id cluster.ID, name, app string) {
		t.Helper()
		if _, err := store.Create(ctxFor(id), labelled(name, string(id)[:1], app), rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []struct{ name, app string }{{"n1", "x"}, {"n2", ""}, {"n3", "x"}} {
		create(clusterB, step.name, step.app)
		create(clusterA, step.name, step.app)
	}
	for _, id := range []cluster.ID{clusterB, clusterA} {
		upd := labelled("n1", string(id)[:1], "x")
		upd.Data["v2"] = "y"
		if _, _, err := store.Update(ctxFor(id), "n1", rest.DefaultUpdatedObjectInfo(upd), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range watches {
		t.Run(tc.name, func(t *testing.T) {
			for i, want := range tc.want {
				select {
				case ev := <-tc.w.ResultChan():
					if got := describe(ev); got != want {
						t.Fatalf("event %d = %s, want %s (all: %v)", i, got, want, tc.want)
					}
				case <-time.After(30 * time.Second):
					t.Fatalf("event %d: none within 30 s, want %s", i, want)
				}
			}
		})
	}
}

// describe is "TYPE <cluster letter>/<name>" of a ConfigMap event.
func describe(ev watch.Event) string {
	obj := ev.Object
	if co, ok := obj.(runtime.CacheableObject); ok {
		obj = co.GetObject()
	}
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return fmt.Sprintf("%s %T", ev.Type, ev.Object)
	}
	return fmt.Sprintf("%s %s/%s", ev.Type, cm.Data["v"], cm.Name)
}

// BenchmarkWriteWithOthersWatching creates ConfigMaps in cluster B's
// "default" while 2,000 watches of cluster A's "default" are open: the
// cost one tenant's watches add to another's writes. It waits for each
// event to reach a watch of B's, so the dispatch is inside the loop.
func BenchmarkWriteWithOthersWatching(b *testing.B) {
	store, _ := newConfigMapStore(b)
	for i := 0; i < 2000; i++ {
		w, err := store.Watch(ctxFor(clusterA), &metainternalversion.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(w.Stop)
	}
	mine, err := store.Watch(ctxFor(clusterB), &metainternalversion.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer mine.Stop()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := store.Create(ctxFor(clusterB), configMap(fmt.Sprintf("c%d", i), "b", ""), rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		<-mine.ResultChan()
	}
}
