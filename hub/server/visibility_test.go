package server

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"

	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/serviceaccounts"
	"github.com/wharfhub/wharf/hub/workspaces"
)

// grantsFunc adapts a function to grants.
type grantsFunc func(ctx context.Context, u user.Info) bool

func (f grantsFunc) binds(ctx context.Context, u user.Info) bool { return f(ctx, u) }

// TestWorkspaceVisibility runs the visibility step over a real workspace
// index. Bindings are given as a table: which users some binding of which
// workspace names.
func TestWorkspaceVisibility(t *testing.T) {
	ctx := context.Background()
	index, ids := indexWith(t, "root:a")
	a := ids[0]
	bound := map[cluster.ID]sets.Set[string]{a: sets.New("alice", "group:devs")}
	g := grantsFunc(func(ctx context.Context, u user.Info) bool {
		id, _ := cluster.From(ctx)
		if bound[id].Has(u.GetName()) {
			return true
		}
		for _, grp := range u.GetGroups() {
			if bound[id].Has("group:" + grp) {
				return true
			}
		}
		return false
	})
	v := visibility{withCluster: (&workspaceRBAC{resolver: index}).withCluster, grants: g}
	alice := &user.DefaultInfo{Name: "alice"}
	bob := &user.DefaultInfo{Name: "bob"}
	dev := &user.DefaultInfo{Name: "dan", Groups: []string{"devs"}}
	saA := serviceaccounts.UserInfo(serviceaccounts.Subject{Cluster: a, Namespace: "default", Name: "bot", UID: "u"}, "")
	provider := &user.DefaultInfo{Name: "system:wharf:provider:hello", Groups: []string{"system:wharf:providers"}}
	target := func(raw string) context.Context {
		return cluster.WithTarget(ctx, cluster.Target{Raw: raw, Explicit: true})
	}
	missingID, err := cluster.NewID()
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		ctx  context.Context
		user user.Info
		deny bool
	}{
		{"bound user by path", target("root:a"), alice, false},
		{"bound user by id", target(string(a)), alice, false},
		{"bound user, cluster already resolved", cluster.WithCluster(ctx, a), alice, false},
		{"bound group", target("root:a"), dev, false},
		{"unbound user", target("root:a"), bob, true},
		{"unbound user, cluster already resolved", cluster.WithCluster(ctx, a), bob, true},
		{"missing path", target("root:nope"), alice, true},
		{"missing id", target(string(missingID)), alice, true},
		{"missing child of a visible workspace", target("root:a:nope"), alice, true},
		{"service account in its workspace", target(string(a)), saA, false},
		{"service account elsewhere", target("root"), saA, true},
		{"wildcard is decided elsewhere", target(cluster.WildcardRaw), bob, false},
		{"provider identities are scoped elsewhere", target("root:nope"), provider, false},
		{"no target", ctx, alice, true},
		{"no user", target("root:a"), nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, attrs := range []authorizer.AttributesRecord{
				{User: tc.user, Verb: "create", APIGroup: "authorization.k8s.io", Resource: "selfsubjectaccessreviews", ResourceRequest: true},
				{User: tc.user, Verb: "get", Path: "/openapi/v3"},
			} {
				d, reason, err := v.Authorize(tc.ctx, attrs)
				if err != nil {
					t.Fatal(err)
				}
				if got := d == authorizer.DecisionDeny; got != tc.deny {
					t.Fatalf("%s: decision %v (%q), want deny=%v", attrs.Verb, d, reason, tc.deny)
				}
				if tc.deny && reason != WorkspaceDenied {
					t.Fatalf("reason %q, want %q", reason, WorkspaceDenied)
				}
				if !tc.deny && d != authorizer.DecisionNoOpinion {
					t.Fatalf("decision %v: the step never allows", d)
				}
			}
		})
	}
}

// TestChainDeniesAlike runs the hub's real chain: for a caller without a
// grant, an existing workspace and a missing one get the same decision and
// reason for every kind of request, and administrators still pass.
func TestChainDeniesAlike(t *testing.T) {
	ctx := context.Background()
	index, ids := indexWith(t, "root:a")
	a := ids[0]
	chain, _, err := newAuthorizer(admins{users: sets.New("hubadmin")}, &workspaceRBAC{resolver: index},
		authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
			return authorizer.DecisionNoOpinion, "", nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	bob := &user.DefaultInfo{Name: "bob", Groups: []string{user.AllAuthenticated}}
	target := func(raw string) context.Context {
		return cluster.WithTarget(ctx, cluster.Target{Raw: raw, Explicit: true})
	}
	for _, attrs := range []authorizer.AttributesRecord{
		{Verb: "create", APIGroup: "authorization.k8s.io", Resource: "selfsubjectaccessreviews", ResourceRequest: true},
		{Verb: "create", APIGroup: "authentication.k8s.io", Resource: "selfsubjectreviews", ResourceRequest: true},
		{Verb: "get", Resource: "configmaps", Namespace: "default", Name: "x", ResourceRequest: true},
		{Verb: "get", Path: "/api"},
		{Verb: "get", Path: "/version"},
		{Verb: "get", Path: "/api/whoami"},
	} {
		attrs.User = bob
		var first string
		for _, raw := range []string{"root:a", string(a), "root:nope", "zzzzzzzzzzzzzzzz"} {
			d, reason, _ := chain.Authorize(target(raw), attrs)
			got := d.String() + " " + reason
			if d != authorizer.DecisionDeny {
				t.Errorf("%s %s%s at %s: %s, want deny", attrs.Verb, attrs.Resource, attrs.Path, raw, got)
			}
			if first == "" {
				first = got
			} else if got != first {
				t.Errorf("%s %s%s: %q at %s, but %q before", attrs.Verb, attrs.Resource, attrs.Path, got, raw, first)
			}
		}
		attrs.User = &user.DefaultInfo{Name: "hubadmin"}
		if d, reason, _ := chain.Authorize(target("root:nope"), attrs); d != authorizer.DecisionAllow {
			t.Errorf("admin: %v %q, want allow (and an honest 404 later)", d, reason)
		}
	}
}

// indexWith returns a workspace index over a real etcd holding root and
// the workspaces of paths, with their ids in order.
func indexWith(t *testing.T, paths ...string) (*workspaces.Index, []cluster.ID) {
	t.Helper()
	etcd := testserver.RunEtcd(t, nil)
	index := workspaces.NewIndex(etcd.Client, "/registry")
	if _, err := index.EnsureRoot(context.Background()); err != nil {
		t.Fatal(err)
	}
	var ids []cluster.ID
	for _, p := range paths {
		id, err := index.Allocate(context.Background(), cluster.Path(p))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return index, ids
}
