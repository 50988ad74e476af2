package providerauth

import (
	"context"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	providersv1alpha1 "github.com/wharfhub/wharf/hub/apis/providers/v1alpha1"
	"github.com/wharfhub/wharf/hub/cluster"
)

// scope is a fixed enablement table: the authorizer's input.
type scope struct {
	groups  map[string][]string
	enabled map[cluster.ID][]string
}

func (s scope) Groups(p string) []string { return s.groups[p] }
func (s scope) Enabled(id cluster.ID, p string) bool {
	for _, e := range s.enabled[id] {
		if e == p {
			return true
		}
	}
	return false
}

type reqCtx struct{}

func TestAuthorizer(t *testing.T) {
	s := scope{
		groups:  map[string][]string{"edges": {"edges.wharf.dev"}, "proxy": {"proxy.wharf.dev"}},
		enabled: map[cluster.ID][]string{"a": {"edges"}, "b": {"proxy"}},
	}
	a := NewAuthorizer(s, func(ctx context.Context) (cluster.ID, bool, bool) {
		v, _ := ctx.Value(reqCtx{}).(string)
		switch v {
		case "":
			return "", false, false
		case "*":
			return "", true, true
		}
		return cluster.ID(v), false, true
	})
	edges := &user.DefaultInfo{Name: providersv1alpha1.ProviderUser("edges"), Groups: []string{providersv1alpha1.ProvidersGroup}}
	forgedGroup := &user.DefaultInfo{Name: providersv1alpha1.ProviderUser("edges")}
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{providersv1alpha1.ProvidersGroup}}
	res := func(u user.Info, verb, group, resource, ns string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: group, Resource: resource, Namespace: ns, ResourceRequest: true}
	}
	allow, deny, none := authorizer.DecisionAllow, authorizer.DecisionDeny, authorizer.DecisionNoOpinion
	for _, c := range []struct {
		name    string
		cluster string
		attrs   authorizer.AttributesRecord
		want    authorizer.Decision
	}{
		{"own group, enabled", "a", res(edges, "create", "edges.wharf.dev", "edges", "default"), allow},
		{"own group, delete, enabled", "a", res(edges, "delete", "edges.wharf.dev", "edges", "default"), allow},
		{"own group, not enabled", "b", res(edges, "list", "edges.wharf.dev", "edges", ""), deny},
		{"other provider's group", "b", res(edges, "list", "proxy.wharf.dev", "resourceproxies", ""), none},
		{"core resources", "a", res(edges, "list", "", "secrets", "default"), none},
		{"bindings where enabled", "a", res(edges, "list", "providers.wharf.dev", "providerbindings", ""), allow},
		{"bindings write", "a", res(edges, "update", "providers.wharf.dev", "providerbindings", ""), none},
		{"bindings status", "a", authorizer.AttributesRecord{User: edges, Verb: "get", APIGroup: "providers.wharf.dev", Resource: "providerbindings", Subresource: "status", ResourceRequest: true}, none},
		{"bindings where not enabled", "b", res(edges, "list", "providers.wharf.dev", "providerbindings", ""), none},
		{"events where enabled", "a", res(edges, "create", "", "events", "default"), allow},
		{"events.k8s.io patch where enabled", "a", res(edges, "patch", "events.k8s.io", "events", "default"), allow},
		{"events delete", "a", res(edges, "delete", "", "events", "default"), none},
		{"events where not enabled", "b", res(edges, "create", "", "events", "default"), none},
		{"wildcard events", "*", res(edges, "create", "", "events", ""), deny},
		{"wildcard list own", "*", res(edges, "list", "edges.wharf.dev", "edges", ""), allow},
		{"wildcard watch own", "*", res(edges, "watch", "edges.wharf.dev", "edges", ""), allow},
		{"wildcard get own", "*", res(edges, "get", "edges.wharf.dev", "edges", ""), deny},
		{"wildcard own in a namespace", "*", res(edges, "list", "edges.wharf.dev", "edges", "default"), deny},
		{"wildcard core", "*", res(edges, "list", "", "configmaps", ""), deny},
		{"wildcard bindings", "*", res(edges, "list", "providers.wharf.dev", "providerbindings", ""), deny},
		{"unresolved cluster", "", res(edges, "list", "edges.wharf.dev", "edges", ""), none},
		{"not a provider", "a", res(alice, "list", "edges.wharf.dev", "edges", ""), none},
		{"provider name without the group", "a", res(forgedGroup, "list", "edges.wharf.dev", "edges", ""), none},
		{"non-resource request", "a", authorizer.AttributesRecord{User: edges, Verb: "get", Path: "/api"}, none},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.WithValue(context.Background(), reqCtx{}, c.cluster)
			got, _, err := a.Authorize(ctx, c.attrs)
			if err != nil || got != c.want {
				t.Errorf("= %v %v, want %v", got, err, c.want)
			}
		})
	}
}

func TestTokens(t *testing.T) {
	ctx := context.Background()
	tokens := NewTokens()
	first, err := tokens.Mint("edges")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := tokens.Mint("proxy")
	resp, ok, err := tokens.AuthenticateToken(ctx, first)
	if !ok || err != nil || resp.User.GetName() != "system:wharf:provider:edges" || !IsProvider(resp.User) {
		t.Fatalf("first token: %v %v %+v", ok, err, resp)
	}
	// A restart mints a new token and revokes the old one.
	second, _ := tokens.Mint("edges")
	if second == first {
		t.Fatal("same token minted twice")
	}
	if _, ok, _ := tokens.AuthenticateToken(ctx, first); ok {
		t.Error("revoked token still accepted")
	}
	for tok, want := range map[string]string{second: "system:wharf:provider:edges", other: "system:wharf:provider:proxy"} {
		if resp, ok, _ := tokens.AuthenticateToken(ctx, tok); !ok || resp.User.GetName() != want {
			t.Errorf("token for %s: %v %+v", want, ok, resp)
		}
	}
	for _, bad := range []string{"", "wharf-provider.", second + "x", second[:len(second)-1]} {
		if _, ok, _ := tokens.AuthenticateToken(ctx, bad); ok {
			t.Errorf("accepted %q", bad)
		}
	}
}
