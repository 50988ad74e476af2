package events

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// A cluster informer's copy names its namespace "<cluster>/<ns>"; the
// event must point at the plain namespace, and the informer's object stays
// untouched.
func TestPlainNamespace(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "abc/team"}}
	got := plainNamespace(cm).(*corev1.ConfigMap)
	if got.Namespace != "team" || cm.Namespace != "abc/team" {
		t.Errorf("got %q, original %q", got.Namespace, cm.Namespace)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n", Namespace: "abc/"}}
	if got := plainNamespace(ns).(*corev1.Namespace); got.Namespace != "" {
		t.Errorf("cluster-scoped: %q", got.Namespace)
	}
}

// An event that names no workspace is never written anywhere.
func TestSinkDropsEventsWithoutCluster(t *testing.T) {
	s, err := NewSink(&rest.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "default"}}); err == nil {
		t.Error("an event without a cluster was accepted")
	}
	e := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "default", Annotations: map[string]string{"wharf.dev/cluster": "c1"}}}
	c, err := s.forEvent(e)
	if err != nil || c == nil || len(s.clients) != 1 {
		t.Fatalf("client for c1: %v %v", c, err)
	}
	s.Forget("c1")
	if len(s.clients) != 0 {
		t.Error("Forget kept the client")
	}
}
