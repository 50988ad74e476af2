package rbac

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/wharfhub/wharf/hub/cluster"
)

// TestUsage: the index counts a workspace's rules and aggregated roles
// through creates, replacements and deletes, per workspace.
func TestUsage(t *testing.T) {
	a := newAuthorizer()
	a.idx.update(clusterA, func(ci *clusterIndex) {
		ci.putRole("ns1", newRole("ns1", "r", rule("get", "", "pods", ""), rule("list", "", "pods", "")))
		ci.putRole("ns1", newRole("ns1", "r", rule("get", "", "pods", ""))) // replaced: 1 rule
		ci.putRole("ns2", newRole("ns2", "r", rule("get", "", "pods", "")))
		ci.putClusterRole(newClusterRole("c", rule("get", "", "pods", ""), rule("list", "", "pods", "")))
		ci.putClusterRole(aggregating("agg", toView)) // its stored rules are the hub's write-back: not counted
		ci.putClusterRole(aggregating("agg2", toView))
		ci.deleteClusterRole("agg2")
		ci.deleteRole("ns2", "r")
		ci.deleteRole("ns2", "missing")
	})
	a.idx.update(clusterB, func(ci *clusterIndex) { ci.putClusterRole(aggregating("agg", toView)) })
	a.aggregateLater(clusterA)
	a.aggregateLater(clusterB)
	for id, want := range map[cluster.ID]Usage{clusterA: {Rules: 3, Aggregated: 1}, clusterB: {Rules: 0, Aggregated: 1}, "cccccccccccccccc": {}} {
		got, err := a.Usage(in(id))
		if err != nil || got != want {
			t.Errorf("%s: usage %+v, %v; want %+v", id, got, err, want)
		}
	}
}

// TestQuota: writes that would take a workspace over its bound are refused
// with upstream's 403 "exceeded quota"; shrinking writes, writes within
// the bound, other workspaces and hub admins pass.
func TestQuota(t *testing.T) {
	a := newAuthorizer()
	a.idx.update(clusterA, func(ci *clusterIndex) {
		ci.putClusterRole(newClusterRole("c", rule("get", "", "pods", ""), rule("list", "", "pods", ""), rule("watch", "", "pods", "")))
		ci.putClusterRole(aggregating("agg", toView))
		// A fourth rule, so that the bound of 5 leaves room for one.
		ci.putRole("ns", newRole("ns", "r", rule("get", "", "pods", "")))
	})
	a.aggregateLater(clusterA)
	q := Quota{RBAC: a, MaxRules: 5, MaxAggregated: 1, ExemptUsers: []string{"hubadmin"}}
	as := func(id cluster.ID, u user.Info) context.Context { return request.WithUser(in(id), u) }
	bob := usr("bob")
	crs := rbacv1.Resource("clusterroles")
	tests := []struct {
		name        string
		ctx         context.Context
		rules, aggr int
		want        string // "" passes; else a substring of the 403
	}{
		{"within", as(clusterA, bob), 1, 0, ""},
		{"up to the bound", as(clusterA, bob), 1, 0, ""},
		{"one rule beyond", as(clusterA, bob), 2, 0, "exceeded quota: workspace-rbac, requested: rules=2, used: rules=4, limited: rules=5"},
		{"one aggregated role beyond", as(clusterA, bob), 0, 1, "requested: aggregatedclusterroles=1, used: aggregatedclusterroles=1, limited: aggregatedclusterroles=1"},
		{"shrinking", as(clusterA, bob), -3, -1, ""},
		{"another workspace", as(clusterB, bob), 5, 1, ""},
		{"hub admin user", as(clusterA, usr("hubadmin")), 100, 100, ""},
		{"system:masters", as(clusterA, usr("root", user.SystemPrivilegedGroup)), 100, 100, ""},
		// An administrator's name impersonated (confined) is no
		// administrator (review 5, #7).
		{"hub admin user impersonated", as(clusterA, &user.DefaultInfo{Name: "hubadmin", Extra: map[string][]string{cluster.ConfinedExtra: {string(clusterA)}}}), 2, 0, "exceeded quota"},
		{"no cluster", request.WithUser(context.Background(), bob), 1, 0, "RBAC quota cannot be evaluated"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := q.CheckQuota(tc.ctx, crs, "x", tc.rules, tc.aggr)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want a 403 with %q", err, tc.want)
			}
		})
	}
	// "up to the bound" only passed the check; it stored nothing.
	if u, _ := a.Usage(in(clusterA)); u.Rules != 4 {
		t.Fatalf("usage %+v", u)
	}
	if err := (Quota{RBAC: a}).CheckQuota(as(clusterA, bob), crs, "x", 1<<20, 1<<20); err != nil {
		t.Fatalf("zero bounds must mean unbounded: %v", err)
	}
}
