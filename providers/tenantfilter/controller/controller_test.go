package controller_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	capsulev1beta1 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta1"
	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
	"github.com/wharfhub/wharf/providers/tenantfilter/controller"
	"github.com/wharfhub/wharf/providers/tenantfilter/crds"
	"github.com/wharfhub/wharf/test/kube"
)

type env struct {
	t   *testing.T
	ctx context.Context
	cs  kubernetes.Interface
	dyn dynamic.Interface
}

// TestController runs every scenario against one kube fixture and one
// controller (the fixture is the costly part); scenarios use distinct names.
func TestController(t *testing.T) {
	e := start(t)
	for _, sc := range []struct {
		name string
		run  func(*testing.T, *env)
	}{
		{"TenantStatus", testTenantStatus},
		{"CapsuleConfigurationUsers", testCapsuleConfigurationUsers},
		{"GlobalProxySettingsReady", testGlobalProxySettingsReady},
		{"ProxySettingReady", testProxySettingReady},
	} {
		t.Run(sc.name, func(t *testing.T) {
			sub := *e
			sub.t = t
			sc.run(t, &sub)
		})
	}
}

func start(t *testing.T) *env {
	t.Helper()
	c := kube.Start(t, kube.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	// The controller starts before the CRDs exist, as it may on a fresh
	// cluster, and must pick them up when they are applied.
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- controller.Run(runCtx, c.Config(), controller.Options{Revalidate: 300 * time.Millisecond})
	}()
	if err := crds.Apply(ctx, c.Config()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("controller.Run: %v", err)
		}
	})
	return &env{t: t, ctx: ctx, cs: c.Clientset(t), dyn: mustDynamic(t, c)}
}

func mustDynamic(t *testing.T, c *kube.Cluster) dynamic.Interface {
	d, err := dynamic.NewForConfig(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (e *env) create(gvr schema.GroupVersionResource, obj runtime.Object) *unstructured.Unstructured {
	e.t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		e.t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	ri := e.dyn.Resource(gvr).Namespace(u.GetNamespace())
	out, err := ri.Create(e.ctx, u, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create %s %s: %v", gvr.Resource, u.GetName(), err)
	}
	return out
}

func (e *env) get(gvr schema.GroupVersionResource, ns, name string, into any) *unstructured.Unstructured {
	e.t.Helper()
	u, err := e.dyn.Resource(gvr).Namespace(ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	if into != nil {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
			e.t.Fatal(err)
		}
	}
	return u
}

// update applies mutate to the stored object and writes it back.
func (e *env) update(gvr schema.GroupVersionResource, ns, name string, mutate func(u *unstructured.Unstructured)) {
	e.t.Helper()
	u := e.get(gvr, ns, name, nil)
	mutate(u)
	if _, err := e.dyn.Resource(gvr).Namespace(ns).Update(e.ctx, u, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) namespace(name string, labels map[string]string, refs ...metav1.OwnerReference) {
	e.t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, OwnerReferences: refs}}
	if _, err := e.cs.CoreV1().Namespaces().Create(e.ctx, ns, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func eventually(t *testing.T, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within 90s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func ref(tnt *unstructured.Unstructured, uid string) metav1.OwnerReference {
	if uid == "" {
		uid = string(tnt.GetUID())
	}
	return metav1.OwnerReference{APIVersion: "capsule.clastix.io/v1beta2", Kind: "Tenant", Name: tnt.GetName(), UID: typesUID(uid)}
}

func testTenantStatus(t *testing.T, e *env) {
	wind := e.create(capsulev1beta2.TenantsGVR, &capsulev1beta2.Tenant{
		TypeMeta:   metav1.TypeMeta{APIVersion: "capsule.clastix.io/v1beta2", Kind: "Tenant"},
		ObjectMeta: metav1.ObjectMeta{Name: "wind"},
		Spec:       capsulev1beta2.TenantSpec{Owners: []capsulev1beta2.OwnerSpec{{Kind: "User", Name: "alice"}}},
	})
	e.namespace("wind-label", map[string]string{capsulev1beta2.TenantLabel: "wind"})
	e.namespace("wind-project", map[string]string{capsulev1beta2.ProjectTenantLabel: "wind"})
	e.namespace("wind-ref", nil, ref(wind, ""))
	e.namespace("wind-stale-ref", nil, ref(wind, "00000000-dead-beef-0000-000000000000"))
	e.namespace("solar-1", map[string]string{capsulev1beta2.TenantLabel: "solar"})
	e.namespace("plain", nil)

	want := func(state capsulev1beta2.TenantState, nss ...string) func() error {
		return func() error {
			var tnt capsulev1beta2.Tenant
			e.get(capsulev1beta2.TenantsGVR, "", "wind", &tnt)
			if !reflect.DeepEqual(tnt.Status.Namespaces, nss) || tnt.Status.Size != uint(len(nss)) || tnt.Status.State != state {
				return fmt.Errorf("status %+v, want %v %s", tnt.Status, nss, state)
			}
			return nil
		}
	}
	eventually(t, want("Active", "wind-label", "wind-project", "wind-ref"))

	// Added later, relabelled away, cordoned: each shows.
	e.namespace("wind-later", map[string]string{capsulev1beta2.TenantLabel: "wind"})
	eventually(t, want("Active", "wind-label", "wind-later", "wind-project", "wind-ref"))
	ns, err := e.cs.CoreV1().Namespaces().Get(e.ctx, "wind-label", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Labels[capsulev1beta2.TenantLabel] = "solar"
	if _, err := e.cs.CoreV1().Namespaces().Update(e.ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, want("Active", "wind-later", "wind-project", "wind-ref"))
	e.update(capsulev1beta2.TenantsGVR, "", "wind", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, true, "spec", "cordoned")
	})
	eventually(t, want("Cordoned", "wind-later", "wind-project", "wind-ref"))

	// No write without a change: several revalidation periods later the
	// object is the same revision.
	rv := e.get(capsulev1beta2.TenantsGVR, "", "wind", nil).GetResourceVersion()
	time.Sleep(2 * time.Second)
	if got := e.get(capsulev1beta2.TenantsGVR, "", "wind", nil).GetResourceVersion(); got != rv {
		t.Errorf("tenant rewritten without a change: %s -> %s", rv, got)
	}
}

func testCapsuleConfigurationUsers(t *testing.T, e *env) {
	e.create(capsulev1beta2.CapsuleConfigurationsGVR, &capsulev1beta2.CapsuleConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "capsule.clastix.io/v1beta2", Kind: "CapsuleConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: capsulev1beta2.CapsuleConfigurationSpec{
			Users:      []capsulev1beta2.UserSpec{{Kind: "Group", Name: "projectcapsule.dev"}},
			UserGroups: []string{"legacy-group", "projectcapsule.dev"},
			UserNames:  []string{"zoe"},
		},
	})
	want := func(gen int64, users ...capsulev1beta2.UserSpec) func() error {
		return func() error {
			var cfg capsulev1beta2.CapsuleConfiguration
			e.get(capsulev1beta2.CapsuleConfigurationsGVR, "", "default", &cfg)
			if !reflect.DeepEqual(cfg.Status.Users, users) || cfg.Status.ObservedGeneration != gen {
				return fmt.Errorf("status %+v (generation %d)", cfg.Status, cfg.Generation)
			}
			return nil
		}
	}
	eventually(t, want(1, capsulev1beta2.UserSpec{Kind: "Group", Name: "legacy-group"},
		capsulev1beta2.UserSpec{Kind: "Group", Name: "projectcapsule.dev"}, capsulev1beta2.UserSpec{Kind: "User", Name: "zoe"}))
	e.update(capsulev1beta2.CapsuleConfigurationsGVR, "", "default", func(u *unstructured.Unstructured) {
		unstructured.RemoveNestedField(u.Object, "spec", "userGroups")
		unstructured.RemoveNestedField(u.Object, "spec", "userNames")
	})
	eventually(t, want(2, capsulev1beta2.UserSpec{Kind: "Group", Name: "projectcapsule.dev"}))
}

func readyOf(t *testing.T, u *unstructured.Unstructured) (capsulev1beta1.SettingsStatus, *metav1.Condition) {
	var st capsulev1beta1.SettingsStatus
	if m, ok := u.Object["status"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &st); err != nil {
			t.Fatal(err)
		}
	}
	return st, meta.FindStatusCondition(st.Conditions, capsulev1beta1.ConditionReady)
}

func wantReady(e *env, gvr schema.GroupVersionResource, ns, name string, status metav1.ConditionStatus, reason string) {
	e.t.Helper()
	eventually(e.t, func() error {
		u := e.get(gvr, ns, name, nil)
		st, c := readyOf(e.t, u)
		if c == nil || c.Status != status || c.Reason != reason || st.ObservedGeneration != u.GetGeneration() || c.ObservedGeneration != u.GetGeneration() {
			return fmt.Errorf("generation %d, status %+v", u.GetGeneration(), st)
		}
		return nil
	})
}
