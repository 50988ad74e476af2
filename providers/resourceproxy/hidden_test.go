package resourceproxy

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
)

// The hub's answers for a workspace target, as its filters word them: the
// impersonation or request of wharf:workspace:<client> refused in a
// workspace that exists, and the 404 of one that does not.
const (
	hubForbidden   = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"users \"wharf:workspace:root:a\" is forbidden: User \"system:wharf:provider:resource-proxy\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope","reason":"Forbidden","details":{"name":"wharf:workspace:root:a","kind":"users"},"code":403}`
	hubRBACDenied  = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"things.g.example.com is forbidden: User \"wharf:workspace:root:a\" cannot list resource \"things\" in API group \"g.example.com\" in the namespace \"ns\"","reason":"Forbidden","details":{"group":"g.example.com","kind":"things"},"code":403}`
	hubMissing     = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"workspaces.tenancy.wharf.dev \"root:b:secret\" not found","reason":"NotFound","details":{"name":"root:b:secret","group":"tenancy.wharf.dev","kind":"workspaces"},"code":404}`
	hubQuotaDenied = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"things.g.example.com \"x\" is forbidden: exceeded quota: q, requested: count/things.g.example.com=1, used: count/things.g.example.com=1, limited: count/things.g.example.com=1","reason":"Forbidden","details":{"name":"x","group":"g.example.com","kind":"things"},"code":403}`
)

// TestHiddenTargetAnswersAsMissing (issue 24, B8): whatever the request, a
// workspace target the client may not reach answers exactly as one that
// does not exist.
func TestHiddenTargetAnswersAsMissing(t *testing.T) {
	var answer atomic.Value
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := answer.Load().(string)
		w.Header().Set("Content-Type", "application/json")
		switch a {
		case hubForbidden, hubRBACDenied, hubQuotaDenied:
			w.WriteHeader(403)
		default:
			w.WriteHeader(404)
		}
		_, _ = w.Write([]byte(a))
	}))
	t.Cleanup(srv.Close)
	hub := &rest.Config{Host: srv.URL, BearerToken: "not-a-secret",
		TLSClientConfig: rest.TLSClientConfig{CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}}
	clk := clocktesting.NewFakeClock(time.Now())
	m := NewMetrics()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	routes := NewRoutes()
	routes.Set("c1", map[string]*Route{"g.example.com/v1": {Cluster: "c1", Group: "g.example.com", Version: "v1", Mode: AccessOwned,
		Resources: []string{"things"}, Target: Target{Workspace: "root:b:secret"}}})
	h := NewHandler(routes, NewTargets(ctx, hub, nil, clk, m, loopbackPolicy(t)), allNamespaces{}, m, clk)

	serve := func(method, path, ctype, body string) (int, string) {
		r := aggregated(method, path)
		if body != "" {
			r = httptest.NewRequest(method, path, strings.NewReader(body))
			for k, v := range aggregated(method, path).Header {
				r.Header[k] = v
			}
			r.Header.Set("Content-Type", ctype)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec.Code, rec.Body.String()
	}
	requests := []struct{ name, method, path, ctype, body string }{
		{"list", http.MethodGet, "/apis/g.example.com/v1/namespaces/ns/things", "", ""},
		{"watch", http.MethodGet, "/apis/g.example.com/v1/namespaces/ns/things?watch=true", "", ""},
		{"get", http.MethodGet, "/apis/g.example.com/v1/namespaces/ns/things/x", "", ""},
		{"create", http.MethodPost, "/apis/g.example.com/v1/namespaces/ns/things", "application/json", `{"apiVersion":"g.example.com/v1","kind":"Thing","metadata":{"name":"x"}}`},
		{"patch", http.MethodPatch, "/apis/g.example.com/v1/namespaces/ns/things/x", "application/merge-patch+json", `{"spec":{}}`},
		{"apply", http.MethodPatch, "/apis/g.example.com/v1/namespaces/ns/things/x?fieldManager=m", "application/apply-patch+yaml", `{"apiVersion":"g.example.com/v1","kind":"Thing","metadata":{"name":"x"}}`},
		{"delete", http.MethodDelete, "/apis/g.example.com/v1/namespaces/ns/things/x", "", ""},
		{"discovery", http.MethodGet, "/apis/g.example.com/v1", "", ""},
	}
	for _, rq := range requests {
		t.Run(rq.name, func(t *testing.T) {
			answer.Store(hubMissing)
			wantCode, want := serve(rq.method, rq.path, rq.ctype, rq.body)
			for _, a := range []string{hubForbidden, hubRBACDenied} {
				answer.Store(a)
				code, got := serve(rq.method, rq.path, rq.ctype, rq.body)
				if code != wantCode || got != want {
					t.Errorf("hidden target answered %d %s; a missing one %d %s", code, got, wantCode, want)
				}
			}
		})
	}
	// A refusal only a caller who reaches the workspace gets passes on.
	answer.Store(hubQuotaDenied)
	if code, got := serve(http.MethodPost, "/apis/g.example.com/v1/namespaces/ns/things", "application/json",
		`{"apiVersion":"g.example.com/v1","kind":"Thing","metadata":{"name":"x"}}`); code != 403 || !strings.Contains(got, "exceeded quota") {
		t.Errorf("quota refusal: %d %s", code, got)
	}
}

func TestHiddenStatus(t *testing.T) {
	for _, tc := range []struct {
		code int
		body string
		want bool
	}{
		{403, hubForbidden, true},
		{403, hubRBACDenied, true},
		{404, hubMissing, true},
		{403, hubQuotaDenied, false},
		{404, `{"kind":"Status","reason":"NotFound","details":{"name":"x","group":"g.example.com","kind":"things"},"code":404}`, false},
		{403, `not json`, false},
	} {
		if got := hiddenStatus(tc.code, []byte(tc.body)); got != tc.want {
			t.Errorf("hiddenStatus(%d, %s) = %v, want %v", tc.code, tc.body, got, tc.want)
		}
	}
}
