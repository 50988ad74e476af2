package enablement

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/wharfhub/wharf/hub/cluster"
)

// table is a fixed enablement state: the filter's input.
type table struct{}

func (table) ProviderOfGroup(g string) (string, bool) {
	return map[string]string{"edges.wharf.dev": "edges"}[g], g == "edges.wharf.dev"
}
func (table) Enabled(id cluster.ID, p string) bool { return id == "a" && p == "edges" }

func TestWithEnablement(t *testing.T) {
	h := WithEnablement(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }),
		table{}, func(u user.Info) bool { return u.GetName() == "hub-admin" })
	for _, c := range []struct {
		name     string
		ctx      func(context.Context) context.Context
		ri       request.RequestInfo
		wantCode int
	}{
		{"enabled", in("a"), res("edges.wharf.dev", "list", ""), http.StatusTeapot},
		{"enabled create", in("a"), res("edges.wharf.dev", "create", ""), http.StatusTeapot},
		{"not enabled list", in("b"), res("edges.wharf.dev", "list", ""), http.StatusNotFound},
		{"not enabled get", in("b"), res("edges.wharf.dev", "get", "e1"), http.StatusNotFound},
		{"not enabled create", in("b"), res("edges.wharf.dev", "create", ""), http.StatusNotFound},
		{"no cluster", func(ctx context.Context) context.Context { return ctx }, res("edges.wharf.dev", "list", ""), http.StatusNotFound},
		{"other group", in("b"), res("apps.example.com", "list", ""), http.StatusTeapot},
		{"core group", in("b"), res("", "list", ""), http.StatusTeapot},
		{"wildcard", cluster.WithWildcard, res("edges.wharf.dev", "list", ""), http.StatusTeapot},
		{"discovery", in("b"), request.RequestInfo{Path: "/apis/edges.wharf.dev/v1alpha1", Verb: "get"}, http.StatusTeapot},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/apis/x", nil)
			ri := c.ri
			r = r.WithContext(request.WithRequestInfo(c.ctx(r.Context()), &ri))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != c.wantCode {
				t.Fatalf("code = %d, want %d: %s", w.Code, c.wantCode, w.Body)
			}
			// kube-apiserver's answer under a group nobody serves.
			if w.Code == http.StatusNotFound && w.Body.String() != "404 page not found\n" {
				t.Errorf("not kube's 404 for an unserved group: %q", w.Body)
			}
		})
	}
	// Only hub administrators get the hint, and only in a header: code and
	// body stay kube's.
	for who, want := range map[string]bool{"hub-admin": true, "alice": false} {
		r := httptest.NewRequest(http.MethodGet, "/apis/x", nil)
		ri := res("edges.wharf.dev", "list", "")
		ctx := request.WithUser(in("b")(r.Context()), &user.DefaultInfo{Name: who})
		r = r.WithContext(request.WithRequestInfo(ctx, &ri))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		got := w.Header().Get("Warning")
		if (got != "") != want || w.Code != http.StatusNotFound || w.Body.String() != "404 page not found\n" {
			t.Errorf("%s: %d %q warning %q", who, w.Code, w.Body, got)
		}
		if want && !strings.Contains(got, `belongs to provider \"edges\"`) {
			t.Errorf("hint %q", got)
		}
	}
}

func in(id cluster.ID) func(context.Context) context.Context {
	return func(ctx context.Context) context.Context { return cluster.WithCluster(ctx, id) }
}

func res(group, verb, name string) request.RequestInfo {
	return request.RequestInfo{IsResourceRequest: true, APIGroup: group, APIVersion: "v1alpha1", Resource: "edges", Verb: verb, Name: name}
}
