package tenantfilter

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wharfhub/wharf/sdk"
)

// TestNoConfig: without a provider config the plugin starts with no
// downstreams and is healthy, so `make run` can load it.
func TestNoConfig(t *testing.T) {
	p := New()
	m := p.Manifest()
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if m.Name != "tenant-filter" || m.Replicas != sdk.ReplicasAny {
		t.Fatalf("manifest %s %s", m.Name, m.Replicas)
	}
	if err := p.Start(context.Background(), sdk.HubConfig{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	if err := p.Healthy(context.Background()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		header     http.Header
		want       int
	}{
		{"unknown downstream", "/clusters/prod/api/v1/namespaces", http.Header{sdk.HeaderUser: {"alice"}}, 404},
		{"no cluster", "/api/v1/namespaces", http.Header{sdk.HeaderUser: {"alice"}}, 404},
		{"metrics without masters", "/metrics", http.Header{sdk.HeaderUser: {"alice"}}, 404},
		{"metrics for masters", "/metrics", http.Header{sdk.HeaderUser: {"root"}, sdk.HeaderGroups: {"system:masters"}}, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, tc.path, nil)
			req.Header = tc.header
			m.Backend.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("code %d, want %d: %s", rec.Code, tc.want, rec.Body)
			}
			if tc.want == 404 && !strings.Contains(rec.Body.String(), `"kind":"Status"`) {
				t.Fatalf("not a Status: %s", rec.Body)
			}
		})
	}
}

func TestBadConfigFailsStart(t *testing.T) {
	p := New()
	if err := p.Start(context.Background(), sdk.HubConfig{Config: []byte("clusters: [{name: a, kubeconfig: /nonexistent}]")}); err == nil {
		t.Fatal("a missing kubeconfig must fail the start")
	}
}

// TestDownstreamCaller: hub identities in the reserved system: space are
// the hub's, not the downstream's (attack review tf:39, tf:44).
func TestDownstreamCaller(t *testing.T) {
	for _, tc := range []struct {
		user   string
		groups []string
		ok     bool
		want   []string
	}{
		{"alice", []string{"projectcapsule.dev", "system:authenticated"}, true, []string{"projectcapsule.dev"}},
		{"wharf-admin", []string{"system:masters", "system:authenticated"}, true, nil},
		{"system:serviceaccount:sa-home:robot", []string{"system:serviceaccounts", "system:serviceaccounts:sa-home"}, false, nil},
		{"system:kube-controller-manager", nil, false, nil},
		{"bob", []string{"system:serviceaccounts:kube-system", "system:cluster:abc", "team"}, true, []string{"team"}},
	} {
		c, ok := downstreamCaller(sdk.Identity{User: tc.user, Groups: tc.groups})
		if ok != tc.ok || ok && (c.User != tc.user || strings.Join(c.Groups, ",") != strings.Join(tc.want, ",")) {
			t.Errorf("%s %v: %v %+v, want %v %v", tc.user, tc.groups, ok, c, tc.ok, tc.want)
		}
	}
}
