package serviceaccounts

import (
	"context"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/wharfhub/wharf/hub/cluster"
)

func TestBinding(t *testing.T) {
	const clusterB = cluster.ID("bbbbbbbbbbbbbbbb")
	// Resolve stands in for the workspace index: root:a and root:b exist.
	paths := map[string]cluster.ID{"root:a": clusterA, "root:b": clusterB}
	b := Binding{Resolve: func(ctx context.Context) context.Context {
		if _, ok := cluster.From(ctx); ok {
			return ctx
		}
		if t, ok := cluster.TargetFrom(ctx); ok {
			if id, ok := paths[t.Raw]; ok {
				return cluster.WithCluster(ctx, id)
			}
		}
		return ctx
	}}
	sa := UserInfo(Subject{Cluster: clusterA, Namespace: "default", Name: "bot", UID: "u"}, "")
	target := func(raw string) context.Context {
		return cluster.WithTarget(context.Background(), cluster.Target{Raw: raw, Explicit: true})
	}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		user user.Info
		want authorizer.Decision
	}{
		{"own workspace, resolved", cluster.WithCluster(context.Background(), clusterA), sa, authorizer.DecisionNoOpinion},
		{"own workspace by path", target("root:a"), sa, authorizer.DecisionNoOpinion},
		{"own workspace by id", cluster.WithCluster(target(string(clusterA)), clusterA), sa, authorizer.DecisionNoOpinion},
		{"other workspace, resolved", cluster.WithCluster(context.Background(), clusterB), sa, authorizer.DecisionDeny},
		{"other workspace by path", target("root:b"), sa, authorizer.DecisionDeny},
		{"wildcard target", target(cluster.WildcardRaw), sa, authorizer.DecisionDeny},
		{"wildcard context", cluster.WithWildcard(context.Background()), sa, authorizer.DecisionDeny},
		{"unknown workspace", target("root:nope"), sa, authorizer.DecisionDeny},
		{"no workspace at all", context.Background(), sa, authorizer.DecisionDeny},
		{"two clusters in extra", cluster.WithCluster(context.Background(), clusterA),
			&user.DefaultInfo{Name: sa.Name, Extra: map[string][]string{ExtraCluster: {string(clusterA), string(clusterB)}}}, authorizer.DecisionDeny},
		{"person in other workspace", cluster.WithCluster(context.Background(), clusterB), &user.DefaultInfo{Name: "ada"}, authorizer.DecisionNoOpinion},
		{"person on wildcard", target(cluster.WildcardRaw), &user.DefaultInfo{Name: "ada", Groups: []string{"system:masters"}}, authorizer.DecisionNoOpinion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, reason, err := b.Authorize(tc.ctx, authorizer.AttributesRecord{User: tc.user, Verb: "get", Resource: "configmaps", ResourceRequest: true})
			if err != nil || d != tc.want {
				t.Fatalf("decision %v (%q, %v), want %v", d, reason, err, tc.want)
			}
		})
	}
}
