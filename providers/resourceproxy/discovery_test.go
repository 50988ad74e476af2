package resourceproxy

import (
	"net/http/httptest"
	"testing"
)

func TestSingularAndKind(t *testing.T) {
	for plural, want := range map[string]string{
		"databases": "database", "policies": "policy", "classes": "class", "boxes": "box",
		"branches": "branch", "meshes": "mesh", "data": "data", "ingress": "ingress",
	} {
		if got := Singular(plural); got != want {
			t.Errorf("Singular(%q) = %q, want %q", plural, got, want)
		}
	}
	if k := kindOf("database"); k != "Database" {
		t.Errorf("kind %q", k)
	}
}

func TestFallbackResources(t *testing.T) {
	l := fallbackResources(&Route{Group: "databases.example.com", Version: "v1", Resources: []string{"backups", "databases"}})
	if l.GroupVersion != "databases.example.com/v1" || len(l.APIResources) != 2 {
		t.Fatalf("fallback %+v", l)
	}
	r := l.APIResources[1]
	if r.Name != "databases" || r.SingularName != "database" || r.Kind != "Database" || !r.Namespaced || len(r.Verbs) != 1 || r.Verbs[0] != "get" {
		t.Fatalf("resource %+v", r)
	}
	w := fallbackResources(&Route{Group: "g.example.com", Version: "v1", Wildcard: true})
	if w.APIResources == nil || len(w.APIResources) != 0 {
		t.Fatalf("wildcard fallback %+v", w)
	}
}

func TestParseRequest(t *testing.T) {
	for _, tc := range []struct {
		method, target string
		want           apiRequest
		ok             bool
	}{
		{"GET", "/apis/g.io", apiRequest{Group: "g.io", Discovery: true}, true},
		{"GET", "/apis/g.io/v1", apiRequest{Group: "g.io", Version: "v1", Discovery: true}, true},
		{"GET", "/apis/g.io/v1/dbs", apiRequest{Group: "g.io", Version: "v1", Resource: "dbs", Verb: "list"}, true},
		{"GET", "/apis/g.io/v1/namespaces/ns/dbs?watch=1", apiRequest{Group: "g.io", Version: "v1", Namespace: "ns", Resource: "dbs", Verb: "watch", Watch: true}, true},
		{"GET", "/apis/g.io/v1/namespaces/ns/dbs/x", apiRequest{Group: "g.io", Version: "v1", Namespace: "ns", Resource: "dbs", Name: "x", Verb: "get"}, true},
		{"PUT", "/apis/g.io/v1/namespaces/ns/dbs/x/status", apiRequest{Group: "g.io", Version: "v1", Namespace: "ns", Resource: "dbs", Name: "x", Sub: "status", Verb: "update"}, true},
		{"POST", "/apis/g.io/v1/namespaces/ns/dbs", apiRequest{Group: "g.io", Version: "v1", Namespace: "ns", Resource: "dbs", Verb: "create"}, true},
		{"DELETE", "/apis/g.io/v1/namespaces/ns/dbs", apiRequest{Group: "g.io", Version: "v1", Namespace: "ns", Resource: "dbs", Verb: "deletecollection"}, true},
		{"PATCH", "/apis/g.io/v1/clusterdbs/x", apiRequest{Group: "g.io", Version: "v1", Resource: "clusterdbs", Name: "x", Verb: "patch"}, true},
		{"GET", "/api/v1/pods", apiRequest{}, false},
		{"GET", "/apis/g.io/v1/../../api", apiRequest{}, false},
	} {
		got, ok := parseRequest(httptest.NewRequest(tc.method, tc.target, nil))
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("%s %s = %+v %v, want %+v %v", tc.method, tc.target, got, ok, tc.want, tc.ok)
		}
	}
}
