package resourceproxy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	rp "github.com/wharfhub/wharf/providers/resourceproxy"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// checkCRD installs the ResourceProxy CRD on a real kube-apiserver and
// shows that its CEL rules refuse what one object can get wrong.
func checkCRD(t *testing.T, e *env) {
	ctx := context.Background()
	d, err := dynamic.NewForConfig(e.kube.Config())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rp.CRD())
	if err != nil {
		t.Fatal(err)
	}
	crds := d.Resource(crdGVR)
	if _, err := crds.Create(ctx, &unstructured.Unstructured{Object: raw}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("install the ResourceProxy CRD: %v", err)
	}
	api := d.Resource(rp.GVR)
	obj := func(name, spec string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(`{"apiVersion":"proxy.wharf.dev/v1alpha1","kind":"ResourceProxy","metadata":{"name":"` + name + `"},"spec":` + spec + `}`)); err != nil {
			t.Fatal(err)
		}
		return u
	}
	eventually(t, "CRD served", func() error {
		_, err := api.Create(ctx, obj("ok", `{"target":{"workspace":"root:x"},"resources":[{"group":"databases.example.com","version":"v1","resource":"databases"}]}`), metav1.CreateOptions{})
		return err
	})
	for _, c := range []struct{ name, spec, want string }{
		{"two-targets", `{"target":{"workspace":"root:x","external":{"secretRef":{"namespace":"a","name":"b"}}},"resources":[{"group":"a.example.com","version":"v1","resource":"x"}]}`, "exactly one of target.workspace and target.external"},
		{"no-target", `{"target":{},"resources":[{"group":"a.example.com","version":"v1","resource":"x"}]}`, "exactly one"},
		{"builtin", `{"target":{"workspace":"root:x"},"resources":[{"group":"apps.k8s.io","version":"v1","resource":"x"}]}`, "group must be a custom group"},
		{"provider", `{"target":{"workspace":"root:x"},"resources":[{"group":"edges.wharf.dev","version":"v1alpha1","resource":"edges"}]}`, "group must be a custom group"},
		{"overlap", `{"target":{"workspace":"root:x"},"resources":[{"group":"a.example.com","version":"v1","resource":"*"},{"group":"a.example.com","version":"v1","resource":"x"}]}`, "overlap"},
		{"mode", `{"target":{"workspace":"root:x"},"accessMode":"some","resources":[{"group":"a.example.com","version":"v1","resource":"x"}]}`, "Unsupported value"},
		{"empty", `{"target":{"workspace":"root:x"},"resources":[]}`, "resources"},
	} {
		_, err := api.Create(ctx, obj(c.name, c.spec), metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
	}
	fmt.Println("crd validation checked")
}
