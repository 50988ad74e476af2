package storage

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
)

// A DELETED event's object loses exactly the fields the cache cannot
// miss: what keys, selects and triggers it stays.
func TestSlimDeleted(t *testing.T) {
	key := func(obj runtime.Object) (string, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return "", err
		}
		return m.GetNamespace() + "/" + m.GetName(), nil
	}
	// As the registry's: name and namespace, plus a Secret's type and a
	// custom resource's selectable spec.color.
	attrs := func(obj runtime.Object) (labels.Set, fields.Set, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, nil, err
		}
		f := fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()}
		switch o := obj.(type) {
		case *corev1.Secret:
			f["type"] = string(o.Type)
		case *unstructured.Unstructured:
			c, _, _ := unstructured.NestedString(o.Object, "spec", "color")
			f["spec.color"] = c
		}
		return m.GetLabels(), f, nil
	}
	s := slimmer{keyFunc: key, getAttrs: attrs}
	om := metav1.ObjectMeta{Name: "a", Namespace: "ns", Labels: map[string]string{"l": "1"}, ResourceVersion: "7"}
	big := string(make([]byte, 1<<20))
	at := time.Unix(1, 0)
	for _, tc := range []struct {
		name  string
		in    runtime.Object
		check func(runtime.Object) error
	}{
		{"configmap keeps only metadata", &corev1.ConfigMap{ObjectMeta: om, Data: map[string]string{"v": big}, BinaryData: map[string][]byte{"b": []byte(big)}},
			func(o runtime.Object) error {
				cm := o.(*corev1.ConfigMap)
				if cm.Data != nil || cm.BinaryData != nil || cm.Name != "a" || cm.Labels["l"] != "1" || cm.ResourceVersion != "7" {
					return fmt.Errorf("%+v", cm)
				}
				return nil
			}},
		{"secret keeps its type", &corev1.Secret{ObjectMeta: om, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"v": []byte(big)}},
			func(o runtime.Object) error {
				if s := o.(*corev1.Secret); s.Data != nil || s.Type != corev1.SecretTypeOpaque {
					return fmt.Errorf("%+v", s)
				}
				return nil
			}},
		{"custom resource keeps a selected spec", &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]interface{}{"name": "a", "namespace": "ns", "resourceVersion": "7"},
			"spec":     map[string]interface{}{"color": "red", "blob": big}, "data": big}},
			func(o runtime.Object) error {
				u := o.(*unstructured.Unstructured)
				if _, ok := u.Object["data"]; ok || u.Object["spec"] == nil || u.GetName() != "a" || u.GetKind() != "Widget" {
					return fmt.Errorf("%v", u.Object["metadata"])
				}
				return nil
			}},
		{"with its record time", &timedObject{Object: &corev1.ConfigMap{ObjectMeta: om, Data: map[string]string{"v": big}}, at: at},
			func(o runtime.Object) error {
				tw, ok := o.(storage.WatchEventWithRecordTime)
				if !ok || !tw.RecordTime().Equal(at) || tw.Unwrap().(*corev1.ConfigMap).Data != nil {
					return fmt.Errorf("%#v", o)
				}
				if m, err := meta.Accessor(o); err != nil || m.GetResourceVersion() != "7" {
					return fmt.Errorf("resource version through the wrapper: %v", err)
				}
				return nil
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.in.DeepCopyObject()
			out := s.slim(tc.in)
			if err := tc.check(out); err != nil {
				t.Error(err)
			}
			// The event's object is shared with nobody, but the hub must
			// not change what it was given.
			if !reflect.DeepEqual(before, tc.in) {
				t.Error("slim changed its input")
			}
		})
	}
}
