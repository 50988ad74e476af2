package crds_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	capsulev1beta1 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta1"
	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
	"github.com/wharfhub/wharf/providers/tenantfilter/crds"
	"github.com/wharfhub/wharf/test/kube"
)

func TestObjectsDecode(t *testing.T) {
	objs, err := crds.Objects()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]apiextensionsv1.ResourceScope{
		"tenants.capsule.clastix.io":               apiextensionsv1.ClusterScoped,
		"capsuleconfigurations.capsule.clastix.io": apiextensionsv1.ClusterScoped,
		"globalproxysettings.capsule.clastix.io":   apiextensionsv1.ClusterScoped,
		"proxysettings.capsule.clastix.io":         apiextensionsv1.NamespaceScoped,
	}
	if len(objs) != len(want) {
		t.Fatalf("%d CRDs, want %d", len(objs), len(want))
	}
	for _, o := range objs {
		scope, ok := want[o.Name]
		if !ok || o.Spec.Scope != scope {
			t.Errorf("CRD %s scope %s, want %v (known %v)", o.Name, o.Spec.Scope, scope, ok)
		}
		if len(o.Spec.Versions) != 1 || o.Spec.Versions[0].Subresources == nil || o.Spec.Versions[0].Subresources.Status == nil {
			t.Errorf("CRD %s: want one version with a status subresource", o.Name)
		}
	}
}

// Against a real kube-apiserver: the CRDs are accepted as structural,
// become Established, re-applying is harmless, Capsule-shaped objects
// (with fields we do not type) are stored unchanged and decode into our
// Go types, and a CRD not written by us is left alone.
func TestApplyOnKubeAPIServer(t *testing.T) {
	c := kube.Start(t, kube.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for range 2 {
		if err := crds.Apply(ctx, c.Config()); err != nil {
			t.Fatal(err)
		}
	}
	ext, err := apiextensionsclient.NewForConfig(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	objs, _ := crds.Objects()
	for _, o := range objs {
		got, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, o.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.NonStructuralSchema && cond.Status == apiextensionsv1.ConditionTrue {
				t.Errorf("CRD %s is not structural: %s", o.Name, cond.Message)
			}
		}
	}

	dyn, err := dynamic.NewForConfig(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	tenant := `{"apiVersion":"capsule.clastix.io/v1beta2","kind":"Tenant","metadata":{"name":"wind"},
"spec":{"owners":[{"kind":"User","name":"alice","proxySettings":[{"kind":"StorageClasses","operations":["List"]}]}],
"nodeSelector":{"pool":"wind"},"namespaceOptions":{"quota":3,"additionalMetadata":{"labels":{"a":"b"}}},
"storageClasses":{"allowed":["fast"],"default":"fast","matchLabels":{"env":"prod"}},
"resourceQuotas":{"scope":"Tenant","items":[{"hard":{"pods":"10"}}]},
"networkPolicies":{"items":[{"policyTypes":["Ingress"],"podSelector":{}}]}}}`
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(tenant), &u.Object); err != nil {
		t.Fatal(err)
	}
	created, err := dyn.Resource(capsulev1beta2.TenantsGVR).Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Capsule-shaped tenant: %v", err)
	}
	if v, _, _ := unstructured.NestedString(created.Object, "spec", "resourceQuotas", "scope"); v != "Tenant" {
		t.Errorf("resourceQuotas were pruned: %v", created.Object["spec"])
	}
	var typed capsulev1beta2.Tenant
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(created.Object, &typed); err != nil {
		t.Fatal(err)
	}
	if typed.Spec.Owners[0].Name != "alice" || typed.Spec.StorageClasses.Default != "fast" || *typed.Spec.NamespaceOptions.Quota != 3 {
		t.Errorf("typed tenant %+v", typed.Spec)
	}

	// An invalid owner kind is refused, as Capsule's schema refuses it.
	bad := u.DeepCopy()
	bad.SetName("bad")
	_ = unstructured.SetNestedSlice(bad.Object, []any{map[string]any{"kind": "Robot", "name": "x"}}, "spec", "owners")
	if _, err := dyn.Resource(capsulev1beta2.TenantsGVR).Create(ctx, bad, metav1.CreateOptions{}); err == nil {
		t.Error("tenant with owner kind Robot was accepted")
	}

	gps := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "capsule.clastix.io/v1beta1", "kind": "GlobalProxySettings",
		"metadata": map[string]any{"name": "g"},
		"spec": map[string]any{"rules": []any{map[string]any{
			"subjects":         []any{map[string]any{"kind": "User", "name": "carol"}},
			"clusterResources": []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"nodes"}, "operations": []any{"List"}, "selector": map[string]any{"matchLabels": map[string]any{"x": "y"}}}},
		}}},
	}}
	if _, err := dyn.Resource(capsulev1beta1.GlobalProxySettingsGVR).Create(ctx, gps, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create GlobalProxySettings: %v", err)
	}

	// A CRD someone else wrote (no managed-by label) survives Apply.
	crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "proxysettings.capsule.clastix.io", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(crd.Labels, crds.ManagedByLabel)
	crd.Spec.Versions[0].AdditionalPrinterColumns = nil
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := crds.Apply(ctx, c.Config()); err != nil {
		t.Fatal(err)
	}
	crd, _ = ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "proxysettings.capsule.clastix.io", metav1.GetOptions{})
	if len(crd.Spec.Versions[0].AdditionalPrinterColumns) != 0 || crd.Labels[crds.ManagedByLabel] != "" {
		t.Error("Apply overwrote a CRD it did not write")
	}
}
