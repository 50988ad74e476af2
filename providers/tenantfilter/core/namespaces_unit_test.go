package core

import (
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
)

func TestInjectNameSelector(t *testing.T) {
	for _, c := range []struct {
		name, client string
		names        []string
		want         string
		bad          bool
	}{
		{"no client selector", "", []string{"b", "a"}, "kubernetes.io/metadata.name in (a,b)", false},
		{"nothing visible", "", nil, "kubernetes.io/metadata.name in (" + noNamespace + ")", false},
		{"ANDed", "team=blue", []string{"a"}, "kubernetes.io/metadata.name in (a),team=blue", false},
		{"client names the same key", "kubernetes.io/metadata.name=x", []string{"a"}, "kubernetes.io/metadata.name=x,kubernetes.io/metadata.name in (a)", false},
		// Concatenating would turn this into "a in (b,kubernetes.io/...)".
		{"malformed client selector", "a in (b", []string{"a"}, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := url.Values{}
			if c.client != "" {
				q.Set("labelSelector", c.client)
			}
			err := injectNameSelector(q, c.names)
			if c.bad {
				if err == nil || !strings.Contains(err.Error(), "labelSelector") {
					t.Fatalf("want a BadRequest, got %v (%s)", err, q.Get("labelSelector"))
				}
				return
			}
			if err != nil || q.Get("labelSelector") != c.want {
				t.Fatalf("got %q %v, want %q", q.Get("labelSelector"), err, c.want)
			}
		})
	}
}

func TestTenantOf(t *testing.T) {
	ref := func(apiVersion, kind, name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name}}
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		refs   []metav1.OwnerReference
		want   string
	}{
		{"capsule label", map[string]string{"capsule.clastix.io/tenant": "wind"}, nil, "wind"},
		{"projectcapsule label", map[string]string{"projectcapsule.dev/tenant": "wind"}, nil, "wind"},
		{"ownerReference wins over labels", map[string]string{"capsule.clastix.io/tenant": "solar"}, ref("capsule.clastix.io/v1beta2", "Tenant", "wind"), "wind"},
		{"a Tenant of another group is no tenant", nil, ref("evil.example/v1", "Tenant", "wind"), ""},
		{"nothing", map[string]string{"team": "x"}, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, _ := tenantOf(c.labels, c.refs)
			if got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestAllowedPath(t *testing.T) {
	c := &Core{opts: withDefaults(Options{})}
	for p, want := range map[string]bool{
		"/api": true, "/apis/": true, "/version": true,
		"/api/v1/namespaces": false, "/apis/apps/v1": false, "/versions": false, "/": false,
	} {
		if got := c.allowedPath(p); got != want {
			t.Errorf("allowedPath(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestImpersonationHeaders(t *testing.T) {
	c := &Core{opts: Options{IgnoredImpersonationGroups: []string{"drop-me"}}, groupRe: regexp.MustCompile(`^(team-.*|drop-me)$`)}
	h := http.Header{
		"Authorization":            {"Bearer secret"},
		"Impersonate-User":         {"system:admin"},
		"Impersonate-Group":        {"system:masters"},
		"Impersonate-Extra-Scopes": {"x"},
		"X-Remote-User":            {"admin"},
		"X-Kedge-User":             {"admin"},
		"Accept":                   {"application/json"},
	}
	stripCredentials(h)
	c.setImpersonation(h, Caller{User: "alice", UID: "u1", Groups: []string{"team-a", "other", "drop-me"}})
	want := http.Header{
		"Accept":            {"application/json"},
		"Impersonate-User":  {"alice"},
		"Impersonate-Uid":   {"u1"},
		"Impersonate-Group": {"team-a"},
	}
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("headers %v, want %v", h, want)
	}
}

func TestNotFoundCandidate(t *testing.T) {
	f := &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
	for _, c := range []struct {
		method, path string
		want         bool
	}{
		{"GET", "/api/v1/namespaces/x/configmaps/cm", true},
		{"GET", "/apis/apps/v1/namespaces/x/deployments/d", true},
		{"GET", "/api/v1/namespaces/x/configmaps", false},
		{"GET", "/api/v1/namespaces/x/pods/p/log", false},
		{"GET", "/api/v1/watch/namespaces/x/configmaps/cm", false},
		{"GET", "/api/v1/namespaces/x/configmaps/cm?watch=1", false},
		{"DELETE", "/api/v1/namespaces/x/configmaps/cm", false},
		{"GET", "/api/v1/namespaces/kube-x/configmaps/cm", false},
		{"GET", "/api/v1/namespaces/default/configmaps/cm", false},
		{"GET", "/api/v1/namespaces/x", false},
	} {
		r, _ := http.NewRequest(c.method, "http://h"+c.path, nil)
		info, err := f.NewRequestInfo(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := notFoundCandidateFor(r, info) != nil; got != c.want {
			t.Errorf("%s %s: candidate %v, want %v", c.method, c.path, got, c.want)
		}
	}
}

func TestFilterListBody(t *testing.T) {
	keep := func(m metav1.ObjectMeta) bool { return m.Namespace == "a" }
	list := `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[{"metadata":{"name":"p","namespace":"a"}},{"metadata":{"name":"q","namespace":"b"}},{"bogus":1}]}`
	out, err := filterListBody([]byte(list), keep)
	if err != nil || !strings.Contains(string(out), `"name":"p"`) || strings.Contains(string(out), `"q"`) || strings.Contains(string(out), "bogus") || !strings.Contains(string(out), `"resourceVersion":"7"`) {
		t.Fatalf("list: %s %v", out, err)
	}
	table := `{"kind":"Table","apiVersion":"meta.k8s.io/v1","columnDefinitions":[],"rows":[{"cells":["p"],"object":{"metadata":{"name":"p","namespace":"a"}}},{"cells":["q"],"object":{"metadata":{"name":"q","namespace":"b"}}},{"cells":["r"]}]}`
	out, err = filterListBody([]byte(table), keep)
	if err != nil || !strings.Contains(string(out), `"p"`) || strings.Contains(string(out), `"q"`) || strings.Contains(string(out), `"r"`) {
		t.Fatalf("table: %s %v", out, err)
	}
	empty := `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":null}`
	if out, err = filterListBody([]byte(empty), keep); err != nil || !strings.Contains(string(out), `"items":[]`) {
		t.Fatalf("empty: %s %v", out, err)
	}
}
