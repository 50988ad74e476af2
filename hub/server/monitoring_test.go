package server

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/wharfhub/wharf/hub/cluster"
)

// TestMonitoringChain runs the hub's real authorizer chain for a scraper
// in system:monitoring: it may GET /metrics and the health paths with
// their sub-paths outside every workspace, with upstream's reason, and
// nothing else: no /debug, no flags, no other verb, nothing under
// /clusters/, nothing in a workspace, no impersonation. A confined
// identity (service-account token, impersonated) carrying the group gets
// nothing, and members of other groups keep /metrics closed.
func TestMonitoringChain(t *testing.T) {
	ctx := context.Background()
	index, ids := indexWith(t, "root:a")
	chain, _, err := newAuthorizer(admins{users: sets.New("hubadmin")}, &workspaceRBAC{resolver: index},
		authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
			return authorizer.DecisionNoOpinion, "", nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	scraper := &user.DefaultInfo{Name: "wharf-metrics", Groups: []string{monitoringGroup, user.AllAuthenticated}}
	confined := &user.DefaultInfo{Name: "alice", Groups: []string{monitoringGroup, user.AllAuthenticated},
		Extra: map[string][]string{cluster.ConfinedExtra: {string(ids[0])}}}
	sa := &user.DefaultInfo{Name: serviceaccount.MakeUsername("default", "prom"),
		Groups: []string{serviceaccount.AllServiceAccountsGroup, user.AllAuthenticated}}
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	root := cluster.WithTarget(ctx, cluster.Target{Raw: string(cluster.RootPath)})
	ws := cluster.WithTarget(ctx, cluster.Target{Raw: string(ids[0]), Explicit: true})
	rootExplicit := cluster.WithTarget(ctx, cluster.Target{Raw: string(cluster.RootPath), Explicit: true})
	wildcard := cluster.WithTarget(ctx, cluster.Target{Raw: "*", Explicit: true})
	path := func(u user.Info, verb, p string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: verb, Path: p}
	}
	res := func(u user.Info, verb, group, resource string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: group, Resource: resource, ResourceRequest: true}
	}
	const reason = `RBAC: allowed by ClusterRoleBinding "system:monitoring" of ClusterRole "system:monitoring" to Group "system:monitoring"`
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		attrs authorizer.AttributesRecord
		allow bool
	}{
		{"metrics", root, path(scraper, "get", "/metrics"), true},
		{"readyz etcd", root, path(scraper, "get", "/readyz/etcd"), true},
		{"livez ping", root, path(scraper, "get", "/livez/ping"), true},
		{"healthz sub-path", root, path(scraper, "get", "/healthz/log"), true},
		{"readyz", root, path(scraper, "get", "/readyz"), true},

		{"metrics put", root, path(scraper, "put", "/metrics"), false},
		{"metrics head", root, path(scraper, "head", "/metrics"), false},
		{"metrics sub-path", root, path(scraper, "get", "/metrics/slis"), false},
		{"metrics traversal", root, path(scraper, "get", "/readyz/../debug/pprof/"), false},
		{"double slash", root, path(scraper, "get", "//metrics"), false},
		{"pprof", root, path(scraper, "get", "/debug/pprof/"), false},
		{"pprof profile", root, path(scraper, "get", "/debug/pprof/profile"), false},
		{"log level", root, path(scraper, "put", "/debug/flags/v"), false},
		{"flags get", root, path(scraper, "get", "/debug/flags/v"), false},
		{"logs", root, path(scraper, "get", "/logs/"), false},
		{"flagz", root, path(scraper, "get", "/flagz"), false},
		{"statusz", root, path(scraper, "get", "/statusz"), false},
		{"metrics in a workspace", ws, path(scraper, "get", "/metrics"), false},
		{"metrics under /clusters/root", rootExplicit, path(scraper, "get", "/metrics"), false},
		{"metrics under /clusters/*", wildcard, path(scraper, "get", "/metrics"), false},
		{"readyz etcd in a workspace", ws, path(scraper, "get", "/readyz/etcd"), false},
		{"discovery in a workspace", ws, path(scraper, "get", "/api"), false},
		{"workspace access", ws, path(scraper, "access", "/"), false},
		{"configmaps in root", root, res(scraper, "get", "", "configmaps"), false},
		{"configmaps in a workspace", ws, res(scraper, "list", "", "configmaps"), false},
		{"workspaces", root, res(scraper, "list", "tenancy.wharf.dev", "workspaces"), false},
		{"impersonate user", root, res(scraper, "impersonate", "", "users"), false},
		{"impersonate group", root, res(scraper, "impersonate", "", "groups"), false},
		{"confined metrics", root, path(confined, "get", "/metrics"), false},
		{"confined in its workspace", ws, path(confined, "get", "/metrics"), false},
		{"service account", root, path(sa, "get", "/metrics"), false},
		{"authenticated user", root, path(alice, "get", "/metrics"), false},
		{"authenticated user readyz etcd", root, path(alice, "get", "/readyz/etcd"), false},
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
}

// TestMonitoringNotImpersonable: the hub's guards refuse to impersonate
// system:monitoring, with every verb upstream knows, in a workspace or
// root, so a workspace admin (who holds "*" there) cannot become a
// scraper.
func TestMonitoringNotImpersonable(t *testing.T) {
	ctx := context.Background()
	index, ids := indexWith(t, "root:a")
	w := &workspaceRBAC{resolver: index}
	g := hubGuards(admins{users: sets.New("hubadmin")}, w.withCluster)
	owner := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	for _, target := range []cluster.Target{{Raw: string(ids[0]), Explicit: true}, {Raw: string(cluster.RootPath)}} {
		tctx := cluster.WithTarget(ctx, target)
		for _, verb := range []string{"impersonate", "impersonate:user-info"} {
			attrs := authorizer.AttributesRecord{User: owner, Verb: verb, Resource: "groups", Name: monitoringGroup, ResourceRequest: true}
			d, _, err := g.Authorizer.Authorize(tctx, attrs)
			if err != nil {
				t.Fatal(err)
			}
			if d != authorizer.DecisionDeny {
				t.Errorf("%s %s in %q: %v, want deny", verb, monitoringGroup, target.Raw, d)
			}
		}
	}
}
