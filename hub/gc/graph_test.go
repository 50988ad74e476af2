package gc

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wharfhub/wharf/hub/cluster"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

// informerCopy builds an object as a cluster informer stores it.
func informerCopy(t *testing.T, id cluster.ID, ns, name string, uid types.UID, owners ...metav1.OwnerReference) interface{} {
	t.Helper()
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: ns, UID: uid, OwnerReferences: owners,
		Annotations: map[string]string{wstorage.ClusterAnnotation: string(id)},
	}}
	out, err := wstorage.KeyByCluster(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func newTestCollector(t *testing.T) *Collector {
	t.Helper()
	c, err := New(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.queue.ShutDown)
	return c
}

// An owner reference resolves in its dependent's cluster only: the
// dependent in B naming the uid of A's object is not A's dependent, and A's
// object is not B's dependent's owner.
func TestGraphIsPerCluster(t *testing.T) {
	c := newTestCollector(t)
	mon := &monitor{kind: schema.GroupKind{Group: "example.com", Kind: "Widget"}, namespaced: true}
	c.observe(informerCopy(t, "a", "default", "owner", "u-owner"), mon)
	ref := metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Widget", Name: "owner", UID: "u-owner"}
	c.observe(informerCopy(t, "b", "default", "attacker", "u-dep", ref), mon)

	if _, deps := c.snapshot(objKey{cluster: "a", uid: "u-owner"}); len(deps) != 0 {
		t.Fatalf("owner in cluster a has dependents from another cluster: %+v", deps[0])
	}
	if _, deps := c.snapshot(objKey{cluster: "b", uid: "u-owner"}); len(deps) != 0 {
		t.Fatalf("a dependent links to an owner that is not in its cluster")
	}
	if c.lookup(objKey{cluster: "b", uid: "u-owner"}) != nil {
		t.Fatal("lookup of cluster b found cluster a's object")
	}
	// The same reference within cluster a links.
	c.observe(informerCopy(t, "a", "default", "dep", "u-dep-a", ref), mon)
	if _, deps := c.snapshot(objKey{cluster: "a", uid: "u-owner"}); len(deps) != 1 || deps[0].name != "dep" {
		t.Fatalf("dependents of a's owner = %+v, want dep", deps)
	}
	// Forgetting B's object leaves A's link alone.
	c.forget(informerCopy(t, "b", "default", "attacker", "u-dep", ref), mon)
	if _, deps := c.snapshot(objKey{cluster: "a", uid: "u-owner"}); len(deps) != 1 {
		t.Fatalf("forgetting b's dependent changed a's graph: %+v", deps)
	}
}

// A reference to a kind no monitor watches counts as a live owner, without
// any read: the collector never deletes what it cannot judge.
func TestUnknownOwnerKindExists(t *testing.T) {
	c := newTestCollector(t)
	n := &node{cluster: "a", namespace: "default", name: "dep"}
	for _, ref := range []metav1.OwnerReference{
		{APIVersion: "nowhere.example.com/v1", Kind: "Ghost", Name: "x", UID: "u1"},
		{APIVersion: "not/a/version", Kind: "Ghost", Name: "x", UID: "u2"},
	} {
		exists, waiting, err := c.ownerState(context.Background(), n, ref)
		if err != nil || !exists || waiting {
			t.Errorf("ownerState(%s) = %v, %v, %v; want exists", ref.APIVersion, exists, waiting, err)
		}
	}
}

// Objects of a stopped monitor leave the graph, and their owners are
// looked at again (a foreground deletion may be waiting for them).
func TestForgetAllDropsMonitor(t *testing.T) {
	c := newTestCollector(t)
	cm := &monitor{kind: schema.GroupKind{Kind: "ConfigMap"}, namespaced: true}
	cr := &monitor{kind: schema.GroupKind{Group: "example.com", Kind: "Widget"}, namespaced: true}
	c.observe(informerCopy(t, "a", "default", "owner", "u-owner"), cm)
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "u-owner"}
	c.observe(informerCopy(t, "a", "default", "w", "u-w", ref), cr)
	for c.queue.Len() > 0 {
		k, _ := c.queue.Get()
		c.queue.Done(k)
	}
	c.forgetAll(cr)
	if _, deps := c.snapshot(objKey{cluster: "a", uid: "u-owner"}); len(deps) != 0 {
		t.Fatalf("stopped monitor's objects still in the graph: %+v", deps)
	}
	if c.lookup(objKey{cluster: "a", uid: "u-w"}) != nil {
		t.Fatal("stopped monitor's object still looked up")
	}
	if k, _ := c.queue.Get(); k != (objKey{cluster: "a", uid: "u-owner"}) {
		t.Fatalf("queued %+v, want the owner", k)
	}
}
