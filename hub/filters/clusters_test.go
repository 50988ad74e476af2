package filters

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"

	"github.com/wharfhub/wharf/hub/apis/scheme"
	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/workspaces"
)

// seen records what the filters passed downstream.
type seen struct {
	called   bool
	path     string
	target   cluster.Target
	id       cluster.ID
	wildcard bool
}

func recorder(s *seen) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.called = true
		s.path = r.URL.Path
		s.target, _ = cluster.TargetFrom(r.Context())
		s.id, _ = cluster.From(r.Context())
		s.wildcard = cluster.IsWildcard(r.Context())
	})
}

func newIndex(t *testing.T) (*workspaces.Index, cluster.ID, cluster.ID) {
	t.Helper()
	etcd := testserver.RunEtcd(t, nil)
	x := workspaces.NewIndex(etcd.Client, "/registry")
	root, err := x.EnsureRoot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	acme, err := x.Allocate(context.Background(), "root:acme")
	if err != nil {
		t.Fatal(err)
	}
	return x, root, acme
}

func TestWithClusterPath(t *testing.T) {
	x, root, acme := newIndex(t)
	codecs := scheme.NewCodecs(scheme.New())
	tests := []struct {
		url      string
		wantCode int
		path     string
		raw      string
		explicit bool
		id       cluster.ID
	}{
		{"/api/v1/namespaces", 200, "/api/v1/namespaces", "root", false, root},
		{"/healthz", 200, "/healthz", "root", false, root},
		{"/clusters/root/api", 200, "/api", "root", true, root},
		{"/clusters/root:acme/apis/x/v1/things", 200, "/apis/x/v1/things", "root:acme", true, acme},
		{"/clusters/" + string(acme) + "/api/v1/namespaces/default/configmaps", 200, "/api/v1/namespaces/default/configmaps", string(acme), true, acme},
		{"/clusters/root:acme", 200, "/", "root:acme", true, acme},
		{"/clusters/*/api/v1/configmaps", 200, "/api/v1/configmaps", "*", true, ""},
		// Unknown in memory: passed on unresolved for the inner filter.
		{"/clusters/root:other/api", 200, "/api", "root:other", true, ""},
		{"/clusters/", 404, "", "", false, ""},
		{"/clusters//api", 404, "", "", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			var s seen
			rec := httptest.NewRecorder()
			WithClusterPath(recorder(&s), x, codecs).ServeHTTP(rec, httptest.NewRequest("GET", "https://hub"+tt.url, nil))
			if rec.Code != tt.wantCode {
				t.Fatalf("code = %d, want %d: %s", rec.Code, tt.wantCode, rec.Body)
			}
			if tt.wantCode != 200 {
				if s.called {
					t.Fatal("delegate called for a rejected request")
				}
				return
			}
			if s.path != tt.path || s.target.Raw != tt.raw || s.target.Explicit != tt.explicit || s.id != tt.id {
				t.Fatalf("downstream saw path=%q target=%+v id=%q", s.path, s.target, s.id)
			}
		})
	}
}

func isMaster(u user.Info) bool { return sets.New(u.GetGroups()...).Has("system:masters") }

func TestWithClusterResolution(t *testing.T) {
	x, root, acme := newIndex(t)
	if err := x.MarkTerminating(context.Background(), acme, "root:acme"); err != nil {
		t.Fatal(err)
	}
	codecs := scheme.NewCodecs(scheme.New())
	admin := &user.DefaultInfo{Name: "admin", Groups: []string{"system:masters"}}
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"devs"}}
	list := &request.RequestInfo{IsResourceRequest: true, Verb: "list", Resource: "configmaps"}
	tests := []struct {
		name     string
		target   *cluster.Target
		user     user.Info
		info     *request.RequestInfo
		wantCode int
		wantID   cluster.ID
		wildcard bool
	}{
		{"root", &cluster.Target{Raw: "root"}, alice, list, 200, root, false},
		{"by id", &cluster.Target{Raw: string(root), Explicit: true}, alice, list, 200, root, false},
		{"unknown", &cluster.Target{Raw: "root:nope", Explicit: true}, admin, list, 404, "", false},
		{"no target fails closed", nil, admin, list, 500, "", false},
		{"wildcard list as admin", &cluster.Target{Raw: "*"}, admin, list, 200, "", true},
		{"wildcard watch as admin", &cluster.Target{Raw: "*"}, admin, &request.RequestInfo{IsResourceRequest: true, Verb: "watch", Resource: "configmaps"}, 200, "", true},
		{"wildcard discovery as admin", &cluster.Target{Raw: "*"}, admin, &request.RequestInfo{Path: "/apis", Verb: "get"}, 200, "", true},
		{"wildcard as unprivileged", &cluster.Target{Raw: "*"}, alice, list, 403, "", false},
		{"wildcard create", &cluster.Target{Raw: "*"}, admin, &request.RequestInfo{IsResourceRequest: true, Verb: "create", Resource: "configmaps", Namespace: "default"}, 400, "", false},
		{"wildcard get", &cluster.Target{Raw: "*"}, admin, &request.RequestInfo{IsResourceRequest: true, Verb: "get", Resource: "configmaps", Name: "x"}, 400, "", false},
		{"wildcard namespaced list", &cluster.Target{Raw: "*"}, admin, &request.RequestInfo{IsResourceRequest: true, Verb: "list", Resource: "configmaps", Namespace: "default"}, 400, "", false},
		{"create in terminating", &cluster.Target{Raw: "root:acme"}, admin, &request.RequestInfo{IsResourceRequest: true, Verb: "create", Resource: "configmaps", Namespace: "default"}, 403, "", false},
		{"read in terminating", &cluster.Target{Raw: "root:acme"}, admin, list, 200, acme, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s seen
			ctx := request.WithRequestInfo(request.WithUser(context.Background(), tt.user), tt.info)
			if tt.target != nil {
				ctx = cluster.WithTarget(ctx, *tt.target)
			}
			req := httptest.NewRequest("GET", "https://hub/api", nil).WithContext(ctx)
			rec := httptest.NewRecorder()
			WithClusterResolution(recorder(&s), x, isMaster, codecs).ServeHTTP(rec, req)
			if rec.Code != tt.wantCode {
				t.Fatalf("code = %d, want %d: %s", rec.Code, tt.wantCode, rec.Body)
			}
			if s.called != (tt.wantCode == 200) {
				t.Fatalf("delegate called = %v", s.called)
			}
			if s.called && (s.id != tt.wantID || s.wildcard != tt.wildcard) {
				t.Fatalf("downstream id=%q wildcard=%v", s.id, s.wildcard)
			}
		})
	}
}
