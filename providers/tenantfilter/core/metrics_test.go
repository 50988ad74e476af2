package core

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestRouteTemplate(t *testing.T) {
	tests := []struct{ path, want string }{
		{"/api/v1/namespaces", "/api/v1/namespaces"},
		{"/api/v1/namespaces/wind-a", "/api/v1/namespaces/{name}"},
		{"/api/v1/namespaces/wind-a/status", "/api/v1/namespaces/{name}/{subresource}"},
		{"/api/v1/namespaces/wind-a/pods", "/api/v1/namespaces/{namespace}/{resource}"},
		{"/api/v1/namespaces/wind-a/pods/p1", "/api/v1/namespaces/{namespace}/{resource}/{name}"},
		{"/api/v1/namespaces/wind-a/pods/p1/exec", "/api/v1/namespaces/{namespace}/{resource}/{name}/{subresource}"},
		{"/api/v1/nodes", "/api/v1/{resource}"},
		{"/api/v1/nodes/n1", "/api/v1/{resource}/{name}"},
		{"/api/v1/watch/namespaces", "/api/v1/namespaces"},
		{"/apis/storage.k8s.io/v1/storageclasses", "/apis/{group}/{version}/{resource}"},
		{"/apis/storage.k8s.io/v1/storageclasses/gold", "/apis/{group}/{version}/{resource}/{name}"},
		{"/apis/apps/v1/namespaces/ns/deployments/d", "/apis/{group}/{version}/namespaces/{namespace}/{resource}/{name}"},
		{"/apis/apps", "/apis/{group}"},
		{"/apis/apps/v1", "/apis/{group}/{version}"},
		{"/api", "/api"},
		{"/api/v1", "/api/v1"},
		{"/apis", "/apis"},
		{"/version", "/version"},
		{"/some/secret-name", "other"},
	}
	for _, tc := range tests {
		if got := RouteTemplate(tc.path); got != tc.want {
			t.Errorf("RouteTemplate(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

func TestMetricsMiddleware(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	h := m.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/hidden") {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		_, _ = w.Write([]byte("{}"))
	}))
	for _, p := range []string{"/api/v1/namespaces", "/api/v1/namespaces", "/api/v1/namespaces/hidden"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, p, nil))
	}
	if got := testutil.ToFloat64(m.requests.WithLabelValues("/api/v1/namespaces", "200")); got != 2 {
		t.Errorf("requests{namespaces,200} = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.requests.WithLabelValues("/api/v1/namespaces/{name}", "404")); got != 1 {
		t.Errorf("requests{namespaces/{name},404} = %v, want 1", got)
	}
	if n := testutil.CollectAndCount(m.latency); n != 2 {
		t.Errorf("latency series = %d, want 2", n)
	}
	if _, err := NewMetrics(reg); err == nil {
		t.Error("registering twice in one registry should fail")
	}
}
