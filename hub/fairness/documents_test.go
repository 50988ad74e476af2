package fairness

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/wharfhub/wharf/hub/cluster"
)

func TestIsDocument(t *testing.T) {
	for _, tt := range []struct {
		verb, path string
		want       bool
	}{
		{"get", "/openapi/v2", true},
		{"get", "/openapi/v3", true},
		{"get", "/openapi/v3/api/v1", true},
		{"get", "/openapi/v3/apis/apps/v1", true},
		{"get", "/api", true},
		{"get", "/api/v1", true},
		{"get", "/apis", true},
		{"get", "/apis/apps", true},
		{"get", "/apis/apps/v1", true},
		{"get", "/apis/tenancy.wharf.dev/v1alpha1", true},
		{"get", "/api/whoami", false},
		{"get", "/api/usage", false},
		{"get", "/version", false},
		{"get", "/metrics", false},
		{"get", "/openapi/v2x", false},
		{"get", "/openapi", false},
		{"head", "/openapi/v2", false},
		{"post", "/apis", false},
	} {
		if got := isDocument(&apirequest.RequestInfo{Verb: tt.verb, Path: tt.path}); got != tt.want {
			t.Errorf("%s %s: %v, want %v", tt.verb, tt.path, got, tt.want)
		}
	}
	if isDocument(&apirequest.RequestInfo{IsResourceRequest: true, Verb: "get", Path: "/api/v1/namespaces"}) {
		t.Error("a resource request is not a document")
	}
}

// TestEstimatorDocuments: an API document's width is learned from what
// its caller was answered there, per viewer, workspace and path.
func TestEstimatorDocuments(t *testing.T) {
	e := NewEstimator(100)
	as := func(who, ws string) context.Context {
		ctx := apirequest.WithUser(context.Background(), &user.DefaultInfo{Name: who})
		return cluster.WithTarget(ctx, cluster.Target{Raw: ws, Explicit: true})
	}
	doc := func(path string) *apirequest.RequestInfo { return &apirequest.RequestInfo{Verb: "get", Path: path} }
	// serve answers path with n bytes and code through WithCost.
	serve := func(ctx context.Context, path string, n, code int) {
		h := e.WithCost(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(code)
			_, _ = w.Write(bytes.Repeat([]byte("a"), n))
		}))
		r := httptest.NewRequest(http.MethodGet, path, nil)
		h.ServeHTTP(httptest.NewRecorder(), r.WithContext(apirequest.WithRequestInfo(ctx, doc(path))))
	}
	// serveGzip answers path with n bytes that gzip to next to nothing.
	serveGzip := func(ctx context.Context, path string, n int) {
		h := e.WithCost(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			_, _ = zw.Write(bytes.Repeat([]byte("a"), n))
			_ = zw.Close()
		}))
		r := httptest.NewRequest(http.MethodGet, path, nil)
		h.ServeHTTP(httptest.NewRecorder(), r.WithContext(apirequest.WithRequestInfo(ctx, doc(path))))
	}
	seats := func(ctx context.Context, path string) uint64 { return e.Seats(ctx, doc(path), "", 40, 100) }
	bob, bobElsewhere, alice := as("bob", "root:users:bob"), as("bob", "root:users:bob:child"), as("alice", "root:users:bob")
	// gone is bob after he hung up: his answers were cut short.
	gone, hangUp := context.WithCancel(bob)
	hangUp()
	for _, s := range []struct {
		name string
		do   func()
		ctx  context.Context
		path string
		want uint64
	}{
		{name: "unknown: the whole share", ctx: bob, path: "/openapi/v2", want: 40},
		{name: "learned: OpenAPI v2 of 3 MiB", do: func() { serve(bob, "/openapi/v2", 3<<20, http.StatusOK) }, ctx: bob, path: "/openapi/v2", want: 12},
		{name: "another path is not known", ctx: bob, path: "/openapi/v3/api/v1", want: 40},
		{name: "another workspace is not known", ctx: bobElsewhere, path: "/openapi/v2", want: 40},
		{name: "another viewer is not known", ctx: alice, path: "/openapi/v2", want: 40},
		{name: "a smaller answer (protobuf) does not lower it", do: func() { serve(bob, "/openapi/v2", 1<<20, http.StatusOK) }, ctx: bob, path: "/openapi/v2", want: 12},
		{name: "a larger one raises it", do: func() { serve(bob, "/openapi/v2", 5<<20, http.StatusOK) }, ctx: bob, path: "/openapi/v2", want: 20},
		{name: "small discovery costs one", do: func() { serve(bob, "/apis", 20<<10, http.StatusOK) }, ctx: bob, path: "/apis", want: 1},
		{name: "an answer other than 200 teaches nothing", do: func() { serve(bob, "/apis/nope", 10, http.StatusNotFound) }, ctx: bob, path: "/apis/nope", want: 40},
		{name: "an answer cut short teaches no first size", do: func() { serve(gone, "/openapi/v3/api/v1", 10, http.StatusOK) }, ctx: bob, path: "/openapi/v3/api/v1", want: 40},
		{name: "an answer cut short does not lower it", do: func() { serve(gone, "/openapi/v2", 10, http.StatusOK) }, ctx: bob, path: "/openapi/v2", want: 20},
		{name: "an answer cut short may raise it", do: func() { serve(gone, "/openapi/v2", 6<<20, http.StatusOK) }, ctx: bob, path: "/openapi/v2", want: 24},
		{name: "a gzipped document is counted as sent (compressed once, hub/apiview)", do: func() { serveGzip(bob, "/openapi/v3/apis/apps/v1", 10<<20) }, ctx: bob, path: "/openapi/v3/apis/apps/v1", want: 1},
		{name: "not a document: one seat", do: func() { serve(bob, "/api/whoami", 10, http.StatusOK) }, ctx: bob, path: "/api/whoami", want: 1},
	} {
		if s.do != nil {
			s.do()
		}
		if got := seats(s.ctx, s.path); got != s.want {
			t.Errorf("%s: %d seats, want %d", s.name, got, s.want)
		}
	}
}
