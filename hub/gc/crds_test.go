package gc

import (
	"fmt"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/wharfhub/wharf/hub/cluster"
	wstorage "github.com/wharfhub/wharf/hub/storage"
)

func testCRD(group, kind string, mutate func(*apiextensionsv1.CustomResourceDefinition)) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1beta1", Served: true}, {Name: "v1", Served: true, Storage: true}, {Name: "v2", Served: false},
			},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{
			AcceptedNames: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, Plural: "widgets"},
			Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
				{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue},
			},
		},
	}
	if mutate != nil {
		mutate(crd)
	}
	return crd
}

// Which CRDs get a monitor, and for what.
func TestSpecOf(t *testing.T) {
	c := newTestCollector(t)
	c.static = []*monitor{{kind: schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "Role"}}}
	m := &crdMonitors{c: c}

	got := m.specOf(testCRD("example.com", "Widget", nil))
	want := crdSpec{kind: schema.GroupKind{Group: "example.com", Kind: "Widget"},
		gvr: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, namespaced: true}
	if got == nil || *got != want {
		t.Fatalf("specOf = %+v, want %+v", got, want)
	}
	if got := m.specOf(testCRD("example.com", "Widget", func(c *apiextensionsv1.CustomResourceDefinition) {
		c.Spec.Scope = apiextensionsv1.ClusterScoped
	})); got == nil || got.namespaced {
		t.Errorf("cluster-scoped CRD: %+v", got)
	}
	for name, mutate := range map[string]func(*apiextensionsv1.CustomResourceDefinition){
		"not established": func(c *apiextensionsv1.CustomResourceDefinition) { c.Status.Conditions = nil },
		"being deleted":   func(c *apiextensionsv1.CustomResourceDefinition) { c.DeletionTimestamp = &metav1.Time{} },
		"no served version": func(c *apiextensionsv1.CustomResourceDefinition) {
			for i := range c.Spec.Versions {
				c.Spec.Versions[i].Served = false
			}
		},
		"no accepted names": func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Status.AcceptedNames = apiextensionsv1.CustomResourceDefinitionNames{}
		},
	} {
		if got := m.specOf(testCRD("example.com", "Widget", mutate)); got != nil {
			t.Errorf("%s: specOf = %+v, want nothing watched", name, got)
		}
	}
	if got := m.specOf(testCRD("rbac.authorization.k8s.io", "Role", nil)); got != nil {
		t.Errorf("CRD shadowing a built-in kind: specOf = %+v, want nothing watched", got)
	}
}

// TestCRDQueueTakesTurns: the CRD queue charges a CRD to the workspace the
// hub's storage recorded it in, as the collector's own queue does.
func TestCRDQueueTakesTurns(t *testing.T) {
	const attacker, victim = "aaaaaaaaaaaaaaaa", "vvvvvvvvvvvvvvvv"
	c, err := New(nil, func(id cluster.ID) string { return "tree:" + string(id) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.queue.ShutDown)
	inf := cache.NewSharedIndexInformer(nil, &apiextensionsv1.CustomResourceDefinition{}, 0, cache.Indexers{})
	if err := c.watchCRDs(nil, inf); err != nil {
		t.Fatal(err)
	}
	q := c.crds.keyed.Queue
	defer q.ShutDown()
	add := func(in, group string) string {
		t.Helper()
		crd := testCRD(group, "Widget", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Annotations = map[string]string{wstorage.ClusterAnnotation: in}
		})
		if err := inf.GetStore().Add(crd); err != nil {
			t.Fatal(err)
		}
		q.Add(crd.Name)
		return crd.Name
	}
	const backlog = 100
	for i := 0; i < backlog; i++ {
		add(attacker, fmt.Sprintf("g%d.example.com", i))
	}
	want := add(victim, "victim.example.com")
	for i := 0; i <= backlog; i++ {
		k, _ := q.Get()
		q.Done(k)
		if k == want {
			if i > 1 {
				t.Fatalf("victim's CRD handed out after %d of the attacker's %d", i, backlog)
			}
			return
		}
	}
	t.Fatal("victim's CRD never handed out")
}
