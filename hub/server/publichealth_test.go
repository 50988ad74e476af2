package server

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/wharfhub/wharf/hub/cluster"
)

// TestPublicHealthChain runs the hub's real authorizer chain for the
// anonymous identity that hub/authn produces on the health paths: it may
// GET exactly /livez, /readyz and /healthz, with upstream's reason, and
// nothing else, whatever else it asks (sub-paths, process-wide paths,
// unclean spellings, other verbs, discovery, self reviews, impersonation).
// An authenticated caller keeps its own grants on the same paths.
func TestPublicHealthChain(t *testing.T) {
	ctx := context.Background()
	index, ids := indexWith(t, "root:a")
	chain, _, err := newAuthorizer(admins{users: sets.New("hubadmin")}, &workspaceRBAC{resolver: index},
		authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
			return authorizer.DecisionNoOpinion, "", nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	anon := &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
	root := cluster.WithTarget(ctx, cluster.Target{Raw: string(cluster.RootPath)})
	ws := cluster.WithTarget(ctx, cluster.Target{Raw: string(ids[0]), Explicit: true})
	path := func(verb, p string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: anon, Verb: verb, Path: p}
	}
	res := func(verb, group, resource string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: anon, Verb: verb, APIGroup: group, Resource: resource, ResourceRequest: true}
	}
	const reason = `RBAC: allowed by ClusterRoleBinding "system:public-info-viewer" of ClusterRole "system:public-info-viewer" to Group "system:unauthenticated"`
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		attrs authorizer.AttributesRecord
		allow bool
	}{
		{"readyz", root, path("get", "/readyz"), true},
		{"livez", root, path("get", "/livez"), true},
		{"healthz", root, path("get", "/healthz"), true},
		{"readyz in a workspace", ws, path("get", "/readyz"), true},

		{"check sub-path", root, path("get", "/readyz/etcd"), false},
		{"livez ping", root, path("get", "/livez/ping"), false},
		{"trailing slash", root, path("get", "/readyz/"), false},
		{"double slash", root, path("get", "//readyz"), false},
		{"traversal", root, path("get", "/readyz/../metrics"), false},
		{"head (upstream's RBAC verb is head)", root, path("head", "/readyz"), false},
		{"post", root, path("post", "/readyz"), false},
		{"put", root, path("put", "/livez"), false},
		{"metrics", root, path("get", "/metrics"), false},
		{"pprof", root, path("get", "/debug/pprof/"), false},
		{"log level", root, path("put", "/debug/flags/v"), false},
		{"version (upstream grants it, the hub never authenticates it)", root, path("get", "/version"), false},
		{"discovery", root, path("get", "/api"), false},
		{"whoami", root, path("get", "/api/whoami"), false},
		{"index", root, path("get", "/"), false},
		{"workspace access", root, path("access", "/"), false},
		{"self review", root, res("create", "authentication.k8s.io", "selfsubjectreviews"), false},
		{"self access review", root, res("create", "authorization.k8s.io", "selfsubjectaccessreviews"), false},
		{"impersonate", root, res("impersonate", "", "users"), false},
		{"read configmaps", root, res("get", "", "configmaps"), false},
		{"list workspaces", root, res("list", "tenancy.wharf.dev", "workspaces"), false},
		{"catalog", root, res("list", "providers.wharf.dev", "catalogentries"), false},
		{"the group without the anonymous name", root,
			authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "mallory", Groups: []string{user.AllUnauthenticated}}, Verb: "get", Path: "/readyz"}, false},
		{"the anonymous name without the group", root,
			authorizer.AttributesRecord{User: &user.DefaultInfo{Name: user.Anonymous}, Verb: "get", Path: "/readyz"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, why, err := chain.Authorize(tc.ctx, tc.attrs)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.allow && (d != authorizer.DecisionAllow || why != reason):
				t.Fatalf("%v %q, want allow %q", d, why, reason)
			case !tc.allow && d == authorizer.DecisionAllow:
				t.Fatalf("allowed (%q)", why)
			}
		})
	}

	// Authenticated callers are unaffected: bob still reads /readyz
	// through system:discovery, and the new step has no opinion on him.
	bob := &user.DefaultInfo{Name: "bob", Groups: []string{user.AllAuthenticated}}
	if d, why, _ := authorizePublicHealth(ctx, authorizer.AttributesRecord{User: bob, Verb: "get", Path: "/readyz"}); d != authorizer.DecisionNoOpinion {
		t.Errorf("public-health step for bob: %v %q", d, why)
	}
}
