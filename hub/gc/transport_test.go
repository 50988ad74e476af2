package gc

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/wharfhub/wharf/hub/cluster"
)

// The loopback metadata client addresses the context's cluster, lists and
// watches /clusters/* with a wildcard context, and sends nothing without a
// cluster.
func TestClusterTransport(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
	}))
	defer srv.Close()
	mc, err := metadata.NewForConfig(clusterConfig(&rest.Config{Host: srv.URL}))
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	ctx := context.Background()

	_, _ = mc.Resource(gvr).Namespace("default").Get(cluster.WithCluster(ctx, "abc"), "w", metav1.GetOptions{})
	_, _ = mc.Resource(gvr).List(cluster.WithWildcard(ctx), metav1.ListOptions{})
	if err := mc.Resource(gvr).Namespace("default").Delete(cluster.WithWildcard(ctx), "w", metav1.DeleteOptions{}); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("wildcard delete: err = %v, want refused", err)
	}
	if _, err := mc.Resource(gvr).Namespace("default").Get(ctx, "w", metav1.GetOptions{}); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("get without cluster: err = %v, want refused", err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{
		"GET /clusters/abc/apis/example.com/v1/namespaces/default/widgets/w",
		"GET /clusters/*/apis/example.com/v1/widgets",
	}
	if strings.Join(paths, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(paths, "\n"), strings.Join(want, "\n"))
	}
}
