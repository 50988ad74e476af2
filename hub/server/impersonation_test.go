package server

import (
	"context"
	"net/http"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/wharfhub/wharf/hub/cluster"
)

func TestImpersonationConfinement(t *testing.T) {
	bob := &authenticator.Response{User: &user.DefaultInfo{Name: "bob"}}
	accept := authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) { return bob, true, nil })
	refuse := authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) { return nil, false, nil })
	here := cluster.WithCluster(context.Background(), "c0here")
	wild := cluster.WithTarget(context.Background(), cluster.Target{Raw: cluster.WildcardRaw, Explicit: true})
	for _, tc := range []struct {
		name   string
		authn  authenticator.Request
		ctx    context.Context
		header http.Header
		want   []string // values of the confinement extra header after authentication
	}{
		{"impersonating in a workspace", accept, here, http.Header{"Impersonate-User": {"alice"}}, []string{"c0here"}},
		{"the client's value is kept, and the hub's added", accept, here,
			http.Header{"Impersonate-User": {"alice"}, "Impersonate-Extra-Wharf.dev%2fcluster": {"c0other"}}, []string{"c0other", "c0here"}},
		{"wildcard", accept, wild, http.Header{"Impersonate-User": {"alice"}}, []string{cluster.WildcardRaw}},
		{"unresolved workspace", accept, context.Background(), http.Header{"Impersonate-User": {"alice"}}, []string{unresolvedCluster}},
		{"no impersonation", accept, here, http.Header{}, nil},
		{"groups without a user are upstream's 400", accept, here, http.Header{"Impersonate-Group": {"dev"}}, nil},
		{"not authenticated", refuse, here, http.Header{"Impersonate-User": {"alice"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(tc.ctx, http.MethodGet, "https://hub/api/v1/secrets", nil)
			req.Header = tc.header
			_, _, _ = withImpersonationConfinement(tc.authn, noResolve).AuthenticateRequest(req)
			got := req.Header.Values(confinedExtraHeader)
			if len(got) != len(tc.want) {
				t.Fatalf("%s = %q, want %q", confinedExtraHeader, got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("%s = %q, want %q", confinedExtraHeader, got, tc.want)
				}
			}
		})
	}
}

func TestConfinedExtraHeaderIsUpstreams(t *testing.T) {
	// Upstream lowercases the header name after the prefix and unescapes
	// it; the result must be the key Binding reads.
	if got, want := http.CanonicalHeaderKey(confinedExtraHeader), "Impersonate-Extra-Wharf.dev%2fcluster"; got != want {
		t.Fatalf("header %q, want %q", got, want)
	}
	if authenticationv1.ImpersonateUserExtraHeaderPrefix != "Impersonate-Extra-" {
		t.Fatalf("prefix %q", authenticationv1.ImpersonateUserExtraHeaderPrefix)
	}
}

func TestConfinementMarker(t *testing.T) {
	m := confinementMarker(noResolve)
	alice := &user.DefaultInfo{Name: "alice"}
	here := cluster.WithCluster(context.Background(), "c0here")
	marker := func(verb, group, key, value string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: alice, Verb: verb, APIGroup: group, Resource: "userextras", Subresource: key, Name: value, ResourceRequest: true}
	}
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		attrs authorizer.AttributesRecord
		allow bool
	}{
		{"legacy, own workspace", here, marker("impersonate", "authentication.k8s.io", cluster.ConfinedExtra, "c0here"), true},
		{"user-info, own workspace", here, marker("impersonate:user-info", "authentication.k8s.io", cluster.ConfinedExtra, "c0here"), true},
		{"another workspace", here, marker("impersonate", "authentication.k8s.io", cluster.ConfinedExtra, "c0other"), false},
		{"wildcard", cluster.WithWildcard(context.Background()), marker("impersonate", "authentication.k8s.io", cluster.ConfinedExtra, "*"), false},
		{"another extra", here, marker("impersonate", "authentication.k8s.io", "example.com/team", "c0here"), false},
		{"another group", here, marker("impersonate", "", cluster.ConfinedExtra, "c0here"), false},
		{"not impersonation", here, marker("get", "authentication.k8s.io", cluster.ConfinedExtra, "c0here"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _, err := m.Authorizer.Authorize(tc.ctx, tc.attrs)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]authorizer.Decision{true: authorizer.DecisionAllow, false: authorizer.DecisionNoOpinion}[tc.allow]; d != want {
				t.Fatalf("decision %v, want %v", d, want)
			}
		})
	}
}
