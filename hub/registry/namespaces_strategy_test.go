package registry

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wharfhub/wharf/hub/namespaces"
)

func nsWith(name string, meta []string, spec []corev1.FinalizerName, phase corev1.NamespacePhase, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: meta, Labels: labels},
		Spec:       corev1.NamespaceSpec{Finalizers: spec},
		Status:     corev1.NamespaceStatus{Phase: phase},
	}
}

var kubeFin = []corev1.FinalizerName{corev1.FinalizerKubernetes}

// TestNamespaceStrategies pins what each write path may change: the main
// resource neither spec.finalizers nor status, /status only status,
// /finalize only spec.finalizers; the name label is always the name; the
// metadata finalizer of earlier hubs turns into spec.finalizers on every
// path but /finalize, so no client write skips the content deletion.
func TestNamespaceStrategies(t *testing.T) {
	st := strategy{kind: &Kind{}}
	label := map[string]string{corev1.LabelMetadataName: "a"}
	type prep func(obj, old *corev1.Namespace)
	main := func(obj, old *corev1.Namespace) { prepareNamespaceUpdate(obj, old) }
	status := func(obj, old *corev1.Namespace) {
		namespaceStatusStrategy{st}.PrepareForUpdate(context.Background(), obj, old)
	}
	finalize := func(obj, old *corev1.Namespace) {
		namespaceFinalizeStrategy{st}.PrepareForUpdate(context.Background(), obj, old)
	}
	for _, tc := range []struct {
		name     string
		prep     prep
		old, obj *corev1.Namespace
		want     *corev1.Namespace
	}{
		{"main keeps spec and status, sets the label", main,
			nsWith("a", nil, kubeFin, corev1.NamespaceActive, label),
			nsWith("a", []string{"x.io/y"}, nil, corev1.NamespaceTerminating, map[string]string{corev1.LabelMetadataName: "b", "k": "v"}),
			nsWith("a", []string{"x.io/y"}, kubeFin, corev1.NamespaceActive, map[string]string{corev1.LabelMetadataName: "a", "k": "v"})},
		{"main migrates the legacy finalizer a client drops", main,
			nsWith("a", []string{namespaces.ContentFinalizer}, nil, corev1.NamespaceActive, label),
			nsWith("a", nil, nil, corev1.NamespaceActive, label),
			nsWith("a", nil, kubeFin, corev1.NamespaceActive, label)},
		{"status keeps spec", status,
			nsWith("a", nil, kubeFin, corev1.NamespaceActive, label),
			nsWith("a", nil, nil, corev1.NamespaceTerminating, nil),
			nsWith("a", nil, kubeFin, corev1.NamespaceTerminating, label)},
		{"status migrates the legacy finalizer", status,
			nsWith("a", []string{namespaces.ContentFinalizer}, nil, corev1.NamespaceActive, label),
			nsWith("a", nil, nil, corev1.NamespaceActive, label),
			nsWith("a", nil, kubeFin, corev1.NamespaceActive, label)},
		{"finalize keeps status, takes spec", finalize,
			nsWith("a", nil, kubeFin, corev1.NamespaceTerminating, label),
			nsWith("a", nil, nil, corev1.NamespaceActive, label),
			nsWith("a", nil, nil, corev1.NamespaceTerminating, label)},
		{"finalize releases the legacy finalizer", finalize,
			nsWith("a", []string{namespaces.ContentFinalizer, "x.io/y"}, nil, corev1.NamespaceTerminating, label),
			nsWith("a", []string{namespaces.ContentFinalizer, "x.io/y"}, nil, corev1.NamespaceTerminating, label),
			nsWith("a", []string{"x.io/y"}, nil, corev1.NamespaceTerminating, label)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.prep(tc.obj, tc.old)
			if !reflect.DeepEqual(tc.obj, tc.want) {
				t.Errorf("got  %+v\nwant %+v", tc.obj, tc.want)
			}
		})
	}
}

func TestPrepareNamespaceCreate(t *testing.T) {
	ns := nsWith("a", []string{namespaces.ContentFinalizer}, []corev1.FinalizerName{"x.io/y"}, corev1.NamespaceTerminating, map[string]string{corev1.LabelMetadataName: "z"})
	prepareNamespace(ns)
	want := nsWith("a", nil, []corev1.FinalizerName{"x.io/y", corev1.FinalizerKubernetes}, corev1.NamespaceActive, map[string]string{corev1.LabelMetadataName: "a"})
	if !reflect.DeepEqual(ns, want) {
		t.Errorf("got  %+v\nwant %+v", ns, want)
	}
}

func TestValidateNamespaceFinalizers(t *testing.T) {
	for fin, ok := range map[corev1.FinalizerName]bool{
		"kubernetes": true, "example.com/x": true, "bad": false, "a/b/c": false,
	} {
		errs := validateNamespace(nsWith("a", nil, []corev1.FinalizerName{fin}, "", nil))
		if (len(errs) == 0) != ok {
			t.Errorf("finalizer %q: %v", fin, errs)
		}
	}
	now := metav1.Now()
	live := nsWith("a", nil, nil, corev1.NamespaceActive, nil)
	live.ResourceVersion = "1"
	deleting := live.DeepCopy()
	deleting.DeletionTimestamp = &now
	s := namespaceStatusStrategy{strategy{kind: &Kind{}}}
	for _, tc := range []struct {
		old   *corev1.Namespace
		phase corev1.NamespacePhase
		ok    bool
	}{{live, corev1.NamespaceActive, true}, {live, corev1.NamespaceTerminating, false}, {deleting, corev1.NamespaceTerminating, true}, {deleting, corev1.NamespaceActive, false}} {
		obj := tc.old.DeepCopy()
		obj.Status.Phase = tc.phase
		if errs := s.ValidateUpdate(context.Background(), obj, tc.old); (len(errs) == 0) != tc.ok {
			t.Errorf("phase %s, deleting %v: %v", tc.phase, tc.old.DeletionTimestamp != nil, errs)
		}
	}
}
