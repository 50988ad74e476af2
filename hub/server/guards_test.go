package server

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/wharfhub/wharf/hub/cluster"
)

// noResolve leaves the request context as it is: the tests put the
// cluster into it themselves.
func noResolve(ctx context.Context) context.Context { return ctx }

// impersonationVerbs are every verb upstream v0.37 authorizes an
// impersonated identity with (k8s.io/apiserver/pkg/endpoints/filters/
// impersonation): legacy and the four constrained modes.
var impersonationVerbs = []string{"impersonate", "impersonate:user-info", "impersonate:serviceaccount", "impersonate:arbitrary-node", "impersonate:associated-node"}

func TestHubGuards(t *testing.T) {
	g := hubGuards(admins{users: sets.New("root-op"), groups: sets.New("system:masters", "platform")}, noResolve)
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	hubAdmin := &user.DefaultInfo{Name: "bob", Groups: []string{"platform"}}
	crd := func(u user.Info, verb string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: "widgets.example.com", ResourceRequest: true}
	}
	type target struct{ resource, subresource, name string }
	impersonation := []struct {
		name string
		t    target
		deny bool
	}{
		{"hub admin group", target{"groups", "", "system:masters"}, true},
		// An administrator's name or group is impersonated as any other
		// (review 5, #7): the identity is confined, so never an
		// administrator (TestConfinedIsNoAdmin).
		{"configured admin group", target{"groups", "", "platform"}, false},
		{"configured admin user", target{"users", "", "root-op"}, false},
		{"provider identity", target{"users", "", "system:wharf:provider:edges"}, true},
		{"provider group", target{"groups", "", "system:wharf:providers"}, true},
		{"workspace group of a service account", target{"groups", "", "system:cluster:abc"}, true},
		{"kube-style system user", target{"users", "", "system:kube-controller-manager"}, true},
		{"system:admin", target{"users", "", "system:admin"}, true},
		{"a node by user name", target{"users", "", "system:node:n1"}, true},
		{"a node (constrained modes)", target{"nodes", "", "n1"}, true},
		{"every group at once", target{"groups", "", "*"}, true},
		{"every user at once", target{"users", "", "*"}, true},
		{"every extra at once", target{"userextras", "*", "*"}, true},
		{"hub-owned extra", target{"userextras", "wharf.dev/home-workspace", "root:users:x"}, true},
		{"hub-owned extra, other case", target{"userextras", "Wharf.dev/Home-Cluster", "x"}, true},
		{"confinement extra of another workspace", target{"userextras", cluster.ConfinedExtra, "c0other"}, true},
		{"confinement extra of this workspace", target{"userextras", cluster.ConfinedExtra, "c0here"}, false},
		{"ordinary extra", target{"userextras", "example.com/team", "a"}, false},
		{"ordinary user", target{"users", "", "carol"}, false},
		{"ordinary group", target{"groups", "", "dev"}, false},
		{"uid", target{"uids", "", "carol-uid"}, false},
		{"authenticated group", target{"groups", "", "system:authenticated"}, false},
		{"service account user", target{"users", "", "system:serviceaccount:default:bot"}, false},
		{"service account groups", target{"groups", "", "system:serviceaccounts:default"}, false},
		{"service account resource", target{"serviceaccounts", "", "bot"}, false},
	}
	type row struct {
		name  string
		ctx   context.Context
		attrs authorizer.AttributesRecord
		deny  bool
	}
	here := cluster.WithCluster(context.Background(), "c0here")
	var rows []row
	for _, verb := range impersonationVerbs {
		for _, tc := range impersonation {
			rows = append(rows, row{verb + " " + tc.name, here, authorizer.AttributesRecord{
				User: alice, Verb: verb, Resource: tc.t.resource, Subresource: tc.t.subresource, Name: tc.t.name, ResourceRequest: true,
			}, tc.deny})
		}
		rows = append(rows,
			row{verb + ": hub admin may impersonate masters", here, authorizer.AttributesRecord{User: hubAdmin, Verb: verb, Resource: "groups", Name: "system:masters", ResourceRequest: true}, false},
			row{verb + ": confinement extra in /clusters/*", cluster.WithWildcard(context.Background()), authorizer.AttributesRecord{
				User: alice, Verb: verb, Resource: "userextras", Subresource: cluster.ConfinedExtra, Name: "*", ResourceRequest: true,
			}, true},
			row{verb + ": confinement extra, workspace unresolved", context.Background(), authorizer.AttributesRecord{
				User: alice, Verb: verb, Resource: "userextras", Subresource: cluster.ConfinedExtra, Name: unresolvedCluster, ResourceRequest: true,
			}, true},
		)
	}
	rows = append(rows,
		// impersonate-on:<mode>:<verb> carries the request, not the
		// identity: impersonate:<mode> always checks that too.
		row{"impersonate-on is the request's check", here, authorizer.AttributesRecord{User: alice, Verb: "impersonate-on:user-info:list", Resource: "secrets", ResourceRequest: true}, false},
		row{"create CRD", here, crd(alice, "create"), true},
		row{"patch CRD", here, crd(alice, "patch"), true},
		row{"delete CRD", here, crd(alice, "delete"), true},
		row{"delete all CRDs", here, crd(alice, "deletecollection"), true},
		row{"read CRD", here, crd(alice, "get"), false},
		row{"list CRDs", here, crd(alice, "list"), false},
		row{"hub admin creates CRD", here, crd(hubAdmin, "create"), false},
		row{"ordinary write", here, authorizer.AttributesRecord{User: alice, Verb: "create", Resource: "configmaps", ResourceRequest: true}, false},
	)
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			d, reason, err := g.Authorizer.Authorize(tc.ctx, tc.attrs)
			if err != nil {
				t.Fatal(err)
			}
			if got := d == authorizer.DecisionDeny; got != tc.deny {
				t.Fatalf("deny = %v (%q), want %v", got, reason, tc.deny)
			}
			if !tc.deny && d != authorizer.DecisionNoOpinion {
				t.Fatalf("a guard never allows; got %v", d)
			}
		})
	}
}

// TestConfinedIsNoAdmin: a hub administrator's name or group makes a hub
// administrator only of an identity that is not confined to a workspace;
// an impersonated one (or a service account) carrying the same name or
// groups is an ordinary identity of its workspace (review 5, #7).
func TestConfinedIsNoAdmin(t *testing.T) {
	a := admins{users: sets.New("root-op"), groups: sets.New("system:masters", "platform")}
	confined := map[string][]string{cluster.ConfinedExtra: {"c0here"}}
	for _, tc := range []struct {
		name string
		u    user.Info
		want bool
	}{
		{"admin user", &user.DefaultInfo{Name: "root-op"}, true},
		{"admin group", &user.DefaultInfo{Name: "bob", Groups: []string{"platform"}}, true},
		{"system:masters", &user.DefaultInfo{Name: "x", Groups: []string{"system:masters"}}, true},
		{"ordinary user", &user.DefaultInfo{Name: "carol", Groups: []string{"system:authenticated"}}, false},
		{"admin user impersonated", &user.DefaultInfo{Name: "root-op", Extra: confined}, false},
		{"admin group impersonated", &user.DefaultInfo{Name: "bob", Groups: []string{"platform"}, Extra: confined}, false},
		{"admin user confined to nothing", &user.DefaultInfo{Name: "root-op", Extra: map[string][]string{cluster.ConfinedExtra: nil}}, false},
		{"nobody", nil, false},
	} {
		if got := a.has(tc.u); got != tc.want {
			t.Errorf("%s: has = %v, want %v", tc.name, got, tc.want)
		}
	}
	// The chain: an impersonated administrator's name may not list
	// across /clusters/* nor act in another workspace.
	d, _, _ := a.Authorize(context.Background(), authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "root-op", Extra: confined}, Verb: "list", Resource: "secrets", ResourceRequest: true})
	if d == authorizer.DecisionAllow {
		t.Errorf("an impersonated administrator's name is allowed as an administrator")
	}
}
