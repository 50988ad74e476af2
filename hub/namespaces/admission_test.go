package namespaces

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
)

// TestImmortalDelete covers every way a delete reaches admission: a named
// delete (any options: dry run, preconditions, propagation are the same
// attributes) and a collection delete, whose attributes carry no name and
// only the stored object says which namespace goes.
func TestImmortalDelete(t *testing.T) {
	ns := func(name string) runtime.Object { return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "default"}}
	dryRun := true
	tests := []struct {
		name      string
		resource  string
		attrName  string
		old       runtime.Object
		dryRun    bool
		forbidden bool
	}{
		{"named delete of default", "namespaces", "default", ns("default"), false, true},
		{"named delete of kube-system", "namespaces", "kube-system", ns("kube-system"), false, true},
		{"dry-run delete of default", "namespaces", "default", ns("default"), dryRun, true},
		{"collection delete reaches default", "namespaces", "", ns("default"), false, true},
		{"collection delete reaches kube-system", "namespaces", "", ns("kube-system"), false, true},
		{"collection delete of another namespace", "namespaces", "", ns("team-a"), false, false},
		{"named delete of another namespace", "namespaces", "team-a", ns("team-a"), false, false},
		{"a ConfigMap named default is no namespace", "configmaps", "default", cm, false, false},
	}
	l := NewLifecycle()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gvr := corev1.SchemeGroupVersion.WithResource(tc.resource)
			a := admission.NewAttributesRecord(nil, tc.old, corev1.SchemeGroupVersion.WithKind("Namespace"), "", tc.attrName, gvr, "",
				admission.Delete, &metav1.DeleteOptions{}, tc.dryRun, nil)
			err := l.Validate(context.Background(), a, nil)
			if tc.forbidden != apierrors.IsForbidden(err) {
				t.Errorf("Validate = %v, want forbidden %v", err, tc.forbidden)
			}
		})
	}
}
