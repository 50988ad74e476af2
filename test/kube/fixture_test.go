package kube_test

import (
	"context"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wharfhub/wharf/test/kube"
)

// widgetsYAML is a CRD and an instance in one manifest: ApplyYAML must wait
// for the CRD to be Established before the instance can be mapped.
const widgetsYAML = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.test.wharf.dev
spec:
  group: test.wharf.dev
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
---
apiVersion: test.wharf.dev/v1
kind: Widget
metadata: {name: first, namespace: team-a}
spec: {size: 3}
`

const readWidgetsYAML = `
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: widget-reader, namespace: team-a}
rules:
- apiGroups: [test.wharf.dev]
  resources: [widgets]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bob-reads-widgets, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: widget-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}
`

var widgets = schema.GroupVersionResource{Group: "test.wharf.dev", Version: "v1", Resource: "widgets"}

// TestNamespaceCRDAndRBAC covers one cluster end to end: a namespace, a CRD
// and its instance from one manifest, static-token users, and an
// impersonated request that RBAC denies and then allows after a RoleBinding.
func TestNamespaceCRDAndRBAC(t *testing.T) {
	c := kube.Start(t, kube.Options{Users: []kube.User{{Name: "alice", Groups: []string{"devs"}}}})
	ctx := testContext(t)

	c.CreateNamespace(t, "team-a")
	if _, err := c.Clientset(t).CoreV1().ServiceAccounts("team-a").Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("default ServiceAccount: %v", err)
	}
	c.ApplyYAML(t, widgetsYAML)
	admin := dynamicFor(t, c.Config())
	w, err := admin.Resource(widgets).Namespace("team-a").Get(ctx, "first", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get widget: %v", err)
	}
	if size, _, _ := unstructured.NestedInt64(w.Object, "spec", "size"); size != 3 {
		t.Fatalf("widget spec.size = %d, want 3", size)
	}

	// A static token authenticates as its user with its groups.
	alice, err := kubernetes.NewForConfig(c.UserConfig(t, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	review, err := alice.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("alice whoami: %v", err)
	}
	if got := review.Status.UserInfo; got.Username != "alice" || !contains(got.Groups, "devs") {
		t.Fatalf("alice is seen as %q in %v, want alice in devs", got.Username, got.Groups)
	}

	bob := dynamicFor(t, c.ImpersonateConfig("bob", "qa"))
	_, err = bob.Resource(widgets).Namespace("team-a").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("bob lists widgets before any binding: err = %v, want Forbidden", err)
	}

	c.ApplyYAML(t, readWidgetsYAML)
	// The RBAC authorizer reads bindings from an informer, so the grant
	// becomes visible shortly after the write; wait for it, bounded.
	err = poll(ctx, func() error {
		_, err := bob.Resource(widgets).Namespace("team-a").List(ctx, metav1.ListOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("bob lists widgets after RoleBinding: %v", err)
	}
	if _, err := bob.Resource(widgets).Namespace("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("bob lists widgets outside team-a: err = %v, want Forbidden", err)
	}
}

func dynamicFor(t *testing.T, cfg *rest.Config) dynamic.Interface {
	t.Helper()
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dc
}

// testContext bounds every wait in a test; the deadline is a safety net
// for hangs, not an assertion about speed.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// poll retries f every 100ms until it returns nil or ctx ends.
func poll(ctx context.Context, f func() error) error {
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
