package core_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/wharfhub/wharf/providers/tenantfilter/core"
)

// deadMetrics is an aggregated API whose service has no endpoints, like a
// metrics-server that is down: its group fails discovery.
const deadMetrics = `
apiVersion: v1
kind: Service
metadata: {name: dead-metrics, namespace: kube-system}
spec:
  ports: [{port: 443, targetPort: 4443}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec:
  group: metrics.k8s.io
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  insecureSkipTLSVerify: true
  service: {name: dead-metrics, namespace: kube-system}
`

const widgetsCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Cluster
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// TestDiscovery: a failing aggregated API neither stalls start nor
// breaks requests, and a CRD installed after start is found without a
// restart (and can be listed through the cache).
func TestDiscovery(t *testing.T) {
	e := startEnv(t)
	wind := e.tenant(t, "wind", "alice")
	e.namespace(t, "wind-a", wind, false, "alice")
	e.fx.ApplyYAML(t, deadMetrics)

	start := time.Now()
	f := e.startFilter(t, core.Options{RequireCapsuleUser: true})
	t.Logf("started and synced in %s with metrics.k8s.io down", time.Since(start))
	alice := f.clientset(t, "alice", capsuleGroup)
	got, err := nsNames(t, alice, metav1.ListOptions{})
	if err != nil || !reflect.DeepEqual(got, []string{"wind-a"}) {
		t.Fatalf("alice list with a dead APIService: %v %v", got, err)
	}
	// The aggregator needs a moment to mark the APIService unavailable;
	// until then discovery of the group may simply time out. Either way
	// the group must end up reported as failed, not crash anything.
	eventually(t, 2*time.Minute, func() error {
		if err := core.RefreshDiscovery(f.core); err != nil {
			return err
		}
		for _, gv := range core.FailedGroups(f.core) {
			if gv.Group == "metrics.k8s.io" {
				return nil
			}
		}
		return fmt.Errorf("metrics.k8s.io not reported failing: %v", core.FailedGroups(f.core))
	})
	if got, err := nsNames(t, alice, metav1.ListOptions{}); err != nil || !reflect.DeepEqual(got, []string{"wind-a"}) {
		t.Fatalf("alice list after the failing refresh: %v %v", got, err)
	}
	c := f.core.Cache()
	if _, ok := c.Resource("metrics.k8s.io", "", "pods"); ok {
		t.Fatal("a group failing discovery is listed")
	}
	if _, ok := c.Resource("", "v1", "namespaces"); !ok {
		t.Fatal("core group lost because another group failed")
	}
	if _, ok := c.Resource("example.com", "", "widgets"); ok {
		t.Fatal("widgets before the CRD exists")
	}
	e.fx.ApplyYAML(t, widgetsCRD)
	var info core.ResourceInfo
	eventually(t, time.Minute, func() error {
		var ok bool
		if info, ok = c.Resource("example.com", "", "widgets"); !ok {
			return fmt.Errorf("widgets not discovered yet")
		}
		return nil
	})
	if info.Namespaced || info.Kind != "Widget" || info.GVR != (schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}) {
		t.Fatalf("widgets: %+v", info)
	}
	found := false
	for _, r := range c.ClusterScoped() {
		found = found || r.GVR == info.GVR
	}
	if !found {
		t.Fatal("widgets missing from ClusterScoped")
	}
	d, err := dynamic.NewForConfig(e.fx.Config())
	if err != nil {
		t.Fatal(err)
	}
	w := map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w1"}}
	if _, err := d.Resource(info.GVR).Create(testCtx(t), toU(w), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, func() error {
		l, err := c.Lister(testCtx(t), info.GVR)
		if err != nil {
			return err
		}
		if _, err := l.Get("w1"); err != nil {
			return err
		}
		return nil
	})
	t.Run("disable-caching answers from live reads", func(t *testing.T) {
		g := e.startFilter(t, core.Options{RequireCapsuleUser: true, DisableCaching: true})
		l, err := g.core.Cache().Lister(testCtx(t), info.GVR)
		if err != nil {
			t.Fatal(err)
		}
		w2 := map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w2"}}
		if _, err := d.Resource(info.GVR).Create(testCtx(t), toU(w2), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Get("w2"); err != nil { // no waiting: a live read sees it at once
			t.Fatalf("live lister: %v", err)
		}
	})
}
