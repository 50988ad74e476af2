package clusters

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

func cm(cluster, ns, name string) *corev1.ConfigMap {
	o := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if cluster != "" {
		o.Annotations = map[string]string{Annotation: cluster}
	}
	return o
}

func TestKeyRoundTrip(t *testing.T) {
	for _, c := range []struct {
		obj                     interface{}
		key                     string
		cluster, namespace, nam string
	}{
		{cm("abc", "default", "x"), "abc|default/x", "abc", "default", "x"},
		{cm("abc", "", "x"), "abc|x", "abc", "", "x"},
		{cache.DeletedFinalStateUnknown{Key: "abc|ns/y"}, "abc|ns/y", "abc", "ns", "y"},
	} {
		key, err := Key(c.obj)
		if err != nil || key != c.key {
			t.Errorf("Key(%v) = %q, %v; want %q", c.obj, key, err, c.key)
			continue
		}
		cl, ns, n, err := SplitKey(key)
		if err != nil || cl != c.cluster || ns != c.namespace || n != c.nam {
			t.Errorf("SplitKey(%q) = %q %q %q %v", key, cl, ns, n, err)
		}
	}
	if _, err := Key(cm("", "default", "x")); err == nil {
		t.Error("an object without a cluster got a key: it would collapse with same-named objects")
	}
	for _, bad := range []string{"", "nocluster", "|ns/x", "c|", "c|/x", "c|ns/", "c|a/b/c"} {
		if _, _, _, err := SplitKey(bad); err == nil {
			t.Errorf("SplitKey(%q) accepted", bad)
		}
	}
}

// Same-named objects of two clusters are two entries, and each index
// answers for its own cluster only.
func TestIndexerKeepsClustersApart(t *testing.T) {
	idx := cache.NewIndexer(Key, Indexers())
	for _, o := range []*corev1.ConfigMap{cm("a", "default", "same"), cm("b", "default", "same"), cm("b", "other", "more")} {
		if err := idx.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	l := NewLister(idx)
	if got := len(idx.List()); got != 3 {
		t.Fatalf("store has %d objects, want 3", got)
	}
	if o, ok, _ := l.Get("a", "default", "same"); !ok || ClusterOf(o) != "a" {
		t.Errorf("Get a/default/same = %v %v", o, ok)
	}
	if _, ok, _ := l.Get("c", "default", "same"); ok {
		t.Error("Get in a cluster without the object found one")
	}
	if got, _ := l.List("b", nil); len(got) != 2 {
		t.Errorf("List b = %d objects, want 2", len(got))
	}
	if got, _ := l.ListNamespace("a", "other", nil); len(got) != 0 {
		t.Errorf("ListNamespace a/other = %v", got)
	}
	if got := l.Clusters(); len(got) != 2 {
		t.Errorf("Clusters = %v", got)
	}
}

func TestForCluster(t *testing.T) {
	base := &rest.Config{Host: "https://hub:6443", BearerToken: "t"}
	for _, c := range []struct{ host, cluster, want string }{
		{"https://hub:6443", "root:a", "https://hub:6443/clusters/root:a"},
		{"https://hub:6443/", "abc123", "https://hub:6443/clusters/abc123"},
		{"https://hub:6443/clusters/root", "*", "https://hub:6443/clusters/*"},
		{"https://hub:6443/prefix/clusters/root:x", "root:y", "https://hub:6443/prefix/clusters/root:y"},
	} {
		cfg := rest.CopyConfig(base)
		cfg.Host = c.host
		got, err := ForCluster(cfg, c.cluster)
		if err != nil || got.Host != c.want || got.BearerToken != "t" {
			t.Errorf("ForCluster(%q, %q) = %v, %v; want %q", c.host, c.cluster, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "../x", "root/x", "a?b", "a%2f"} {
		if _, err := ForCluster(base, bad); err == nil {
			t.Errorf("ForCluster(%q) accepted", bad)
		}
	}
}
