package apiview

import (
	"context"
	"testing"

	"github.com/wharfhub/wharf/hub/cluster"
)

func TestVisible(t *testing.T) {
	v := NewView(testCatalog, "", "rbac.authorization.k8s.io")
	in := func(id cluster.ID) context.Context { return cluster.WithCluster(context.Background(), id) }
	for _, c := range []struct {
		ctx   context.Context
		group string
		want  bool
	}{
		{in("bound"), "widgets.example.com", true},
		{in("other"), "widgets.example.com", false},
		{context.Background(), "widgets.example.com", false},
		{cluster.WithWildcard(context.Background()), "widgets.example.com", true},
		{in("other"), "admin.example.com", true},
		{in("other"), "rbac.authorization.k8s.io", true},
		{in("other"), "", true},
	} {
		if got := v.Visible(c.ctx, c.group); got != c.want {
			t.Errorf("Visible(%v, %q) = %v, want %v", c.ctx, c.group, got, c.want)
		}
	}
}

func TestClusterPrefix(t *testing.T) {
	for _, c := range []struct {
		target cluster.Target
		want   string
	}{
		{cluster.Target{Raw: "root"}, ""},
		{cluster.Target{Raw: "root:fid", Explicit: true}, "/clusters/root:fid"},
		{cluster.Target{Raw: "a b?c", Explicit: true}, "/clusters/a%20b%3Fc"},
	} {
		if got := clusterPrefix(cluster.WithTarget(context.Background(), c.target)); got != c.want {
			t.Errorf("clusterPrefix(%+v) = %q, want %q", c.target, got, c.want)
		}
	}
	if got := clusterPrefix(context.Background()); got != "" {
		t.Errorf("no target: %q", got)
	}
}
