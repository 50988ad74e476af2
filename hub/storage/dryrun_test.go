package storage

import (
	"context"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/wharfhub/wharf/hub/cluster"
)

func TestDryRunStamp(t *testing.T) {
	d := NewDryRunStamp(map[schema.GroupResource]bool{apiextensionsv1.Resource("customresourcedefinitions"): true})
	forged := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: "x", Annotations: map[string]string{ClusterAnnotation: "victim"}}
	}
	cm := corev1.SchemeGroupVersion.WithResource("configmaps")
	for _, c := range []struct {
		name     string
		obj      runtime.Object
		res      schema.GroupVersionResource
		sub      string
		dryRun   bool
		ctx      context.Context
		want     string // annotation afterwards
		wantNone bool   // no annotations at all
	}{
		{"dry-run create is stamped", &corev1.ConfigMap{ObjectMeta: forged()}, cm, "", true, cluster.WithCluster(context.Background(), "mine"), "mine", false},
		{"real writes are the decorator's", &corev1.ConfigMap{ObjectMeta: forged()}, cm, "", false, cluster.WithCluster(context.Background(), "mine"), "victim", false},
		{"hub-wide resources get the global cluster", &apiextensionsv1.CustomResourceDefinition{ObjectMeta: forged()},
			apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"), "", true, cluster.WithCluster(context.Background(), "mine"), string(cluster.Global), false},
		{"reviews are never stored", &authenticationv1.TokenReview{}, authenticationv1.SchemeGroupVersion.WithResource("tokenreviews"), "", true,
			cluster.WithCluster(context.Background(), "mine"), "", true},
		{"no cluster, no stamp", &corev1.ConfigMap{ObjectMeta: forged()}, cm, "", true, context.Background(), "victim", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := admission.NewAttributesRecord(c.obj, nil, schema.GroupVersionKind{}, "default", "x", c.res, c.sub, admission.Create, nil, c.dryRun, nil)
			if err := d.Admit(c.ctx, a, nil); err != nil {
				t.Fatal(err)
			}
			got := c.obj.(metav1.Object).GetAnnotations()
			if c.wantNone {
				if len(got) != 0 {
					t.Fatalf("annotations %v, want none", got)
				}
				return
			}
			if got[ClusterAnnotation] != c.want {
				t.Fatalf("cluster %q, want %q", got[ClusterAnnotation], c.want)
			}
		})
	}
}
