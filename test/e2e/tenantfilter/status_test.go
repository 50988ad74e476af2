package tenantfilter

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	capsulev1beta1 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta1"
	capsulev1beta2 "github.com/wharfhub/wharf/providers/tenantfilter/apis/capsule/v1beta2"
)

// The status controller runs inside the standalone binary by default
// (--status-controller=true); these tests start the real binary and watch
// the statuses on the kube-apiserver.

const statusTimeout = 90 * time.Second

// waitReady waits until a settings object's status.observedGeneration and
// its Ready condition's observedGeneration both equal its generation, and
// Ready has the given status and reason; it returns the condition.
func waitReady(t *testing.T, gvr schema.GroupVersionResource, ns, name string, status metav1.ConditionStatus, reason string) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	eventually(t, statusTimeout, func() error {
		u, err := adminDynamic().Resource(gvr).Namespace(ns).Get(testCtx(t), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var st capsulev1beta1.SettingsStatus
		if m, ok := u.Object["status"].(map[string]any); ok {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &st); err != nil {
				return err
			}
		}
		c := meta.FindStatusCondition(st.Conditions, capsulev1beta1.ConditionReady)
		gen := u.GetGeneration()
		if c == nil || st.ObservedGeneration != gen || c.ObservedGeneration != gen || c.Status != status || c.Reason != reason {
			return fmt.Errorf("%s %s: generation %d, status %+v; want Ready=%s %s", gvr.Resource, name, gen, st, status, reason)
		}
		got = *c
		return nil
	})
	return got
}

// setFirstClusterResource changes rules[0].clusterResources[0] of a
// GlobalProxySettings as the admin (a spec change: generation + 1).
func setFirstClusterResource(t *testing.T, name string, mutate func(cr map[string]any)) {
	t.Helper()
	res := adminDynamic().Resource(capsulev1beta1.GlobalProxySettingsGVR)
	u, err := res.Get(testCtx(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rules, _, _ := unstructured.NestedSlice(u.Object, "spec", "rules")
	mutate(rules[0].(map[string]any)["clusterResources"].([]any)[0].(map[string]any))
	if err := unstructured.SetNestedSlice(u.Object, rules, "spec", "rules"); err != nil {
		t.Fatal(err)
	}
	if _, err := res.Update(testCtx(t), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestStatusSettingsFollowSpec(t *testing.T) {
	startProxy(t, proxyOptions{})
	gvr := capsulev1beta1.GlobalProxySettingsGVR
	name := uniq("status-gps")
	createGlobalProxySettings(t, name, capsulev1beta1.GlobalSubjectSpec{
		Subjects: []capsulev1beta1.GlobalSubject{{Kind: capsulev1beta2.UserOwner, Name: "carol"}},
		ClusterResources: []capsulev1beta1.ClusterResource{{APIGroups: []string{""}, Resources: []string{"nodes"},
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": name}}}},
	})
	waitReady(t, gvr, "", name, metav1.ConditionTrue, "Valid")

	setFirstClusterResource(t, name, func(cr map[string]any) { cr["operations"] = []any{"List", "Watch"} })
	c := waitReady(t, gvr, "", name, metav1.ConditionFalse, "InvalidOperation")
	if !strings.Contains(c.Message, "Watch") {
		t.Errorf("Ready message %q does not name the operation", c.Message)
	}
	setFirstClusterResource(t, name, func(cr map[string]any) { cr["operations"] = []any{"Get"} })
	waitReady(t, gvr, "", name, metav1.ConditionTrue, "Valid")

	// A kind whose discovery lacks get.
	setFirstClusterResource(t, name, func(cr map[string]any) {
		cr["apiGroups"] = []any{"authorization.k8s.io"}
		cr["resources"] = []any{"selfsubjectaccessreviews"}
	})
	waitReady(t, gvr, "", name, metav1.ConditionFalse, "UnsupportedResource")

	// ProxySettings: outside any tenant Ready but granting nothing; in a
	// tenant namespace Valid.
	loose := uniq("status-loose")
	createNamespace(t, nsObj(loose))
	createProxySetting(t, loose, "share", capsulev1beta1.OwnerSpec{Kind: capsulev1beta2.UserOwner, Name: "dave",
		ProxyOperations: []capsulev1beta2.ProxySettings{{Kind: capsulev1beta2.NodesProxy, Operations: []capsulev1beta2.ProxyOperation{capsulev1beta2.ListOperation}}}})
	c = waitReady(t, capsulev1beta1.ProxySettingsGVR, loose, "share", metav1.ConditionTrue, "NotInTenantNamespace")
	if !strings.Contains(c.Message, "grants nothing") {
		t.Errorf("Ready message %q does not say it grants nothing", c.Message)
	}
	tnt := createTenant(t, newTenant(uniq("status-tnt"), userOwner(freshUser(t))))
	inside := uniq("status-inside")
	createTenantNamespace(t, tnt, inside, linkCapsule)
	createProxySetting(t, inside, "share", capsulev1beta1.OwnerSpec{Kind: capsulev1beta2.UserOwner, Name: "dave"})
	waitReady(t, capsulev1beta1.ProxySettingsGVR, inside, "share", metav1.ConditionTrue, "Valid")
}

func waitTenantNamespaces(t *testing.T, name string, want []string) {
	t.Helper()
	eventually(t, statusTimeout, func() error {
		tnt := getTenant(t, name)
		if !reflect.DeepEqual(tnt.Status.Namespaces, want) || tnt.Status.Size != uint(len(want)) || tnt.Status.State != capsulev1beta2.TenantStateActive {
			return fmt.Errorf("tenant %s status %+v, want namespaces %v", name, tnt.Status, want)
		}
		return nil
	})
}

func TestStatusTenantNamespaces(t *testing.T) {
	p := startProxy(t, proxyOptions{TLS: true})
	owner := freshUser(t)
	tnt := createTenant(t, newTenant(uniq("status-tenant"), userOwner(owner)))
	a, b, c := uniq("st-label"), uniq("st-project"), uniq("st-ref")
	createTenantNamespace(t, tnt, a, linkLabel)
	createTenantNamespace(t, tnt, b, linkProject)
	createTenantNamespace(t, tnt, c, linkOwnerRef)
	createNamespace(t, nsObj(uniq("st-unrelated")))
	want := sorted(a, b, c)
	waitTenantNamespaces(t, tnt.Name, want)

	// A namespace the owner creates through the proxy joins the status.
	d := uniq("st-created")
	if _, err := p.Kubectl(t, owner, "create", "namespace", d); err != nil {
		t.Fatalf("owner creating a namespace in their tenant: %v", err)
	}
	waitTenantNamespaces(t, tnt.Name, sorted(a, b, c, d))
}

func TestStatusCapsuleConfigurationUsers(t *testing.T) {
	startProxy(t, proxyOptions{})
	name := uniq("status-cfg")
	res := adminDynamic().Resource(capsulev1beta2.CapsuleConfigurationsGVR)
	cfg := &capsulev1beta2.CapsuleConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: capsulev1beta2.SchemeGroupVersion.String(), Kind: "CapsuleConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: capsulev1beta2.CapsuleConfigurationSpec{
			Users:      []capsulev1beta2.UserSpec{{Kind: capsulev1beta2.GroupOwner, Name: capsuleGroup}},
			UserGroups: []string{tenantGroupX},
			UserNames:  []string{"oscar"},
		},
	}
	if _, err := res.Create(testCtx(t), toUnstructured(t, cfg), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait := func(gen int64, want ...capsulev1beta2.UserSpec) {
		t.Helper()
		eventually(t, statusTimeout, func() error {
			u, err := res.Get(testCtx(t), name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			var got capsulev1beta2.CapsuleConfiguration
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &got); err != nil {
				return err
			}
			if !reflect.DeepEqual(got.Status.Users, want) || got.Status.ObservedGeneration != gen {
				return fmt.Errorf("status %+v, want users %v at generation %d", got.Status, want, gen)
			}
			return nil
		})
	}
	wait(1, capsulev1beta2.UserSpec{Kind: capsulev1beta2.GroupOwner, Name: capsuleGroup},
		capsulev1beta2.UserSpec{Kind: capsulev1beta2.GroupOwner, Name: tenantGroupX},
		capsulev1beta2.UserSpec{Kind: capsulev1beta2.UserOwner, Name: "oscar"})

	u, err := res.Get(testCtx(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unstructured.RemoveNestedField(u.Object, "spec", "userNames")
	if _, err := res.Update(testCtx(t), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait(2, capsulev1beta2.UserSpec{Kind: capsulev1beta2.GroupOwner, Name: capsuleGroup},
		capsulev1beta2.UserSpec{Kind: capsulev1beta2.GroupOwner, Name: tenantGroupX})
}
