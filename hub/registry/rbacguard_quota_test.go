package registry

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// recordQuota records what the guard asks the quota.
type recordQuota struct {
	gr          schema.GroupResource
	rules, aggr int
	asked       bool
}

func (r *recordQuota) CheckQuota(_ context.Context, gr schema.GroupResource, _ string, rules, aggr int) error {
	r.gr, r.rules, r.aggr, r.asked = gr, rules, aggr, true
	return nil
}

// TestQuotaDelta: the quota is asked about what a write adds over the
// stored object (create, and create-on-update, against nothing), and not
// about bindings.
func TestQuotaDelta(t *testing.T) {
	rules := func(n int) []rbacv1.PolicyRule { return make([]rbacv1.PolicyRule, n) }
	agg := &rbacv1.AggregationRule{}
	tests := []struct {
		name        string
		obj, old    runtime.Object
		asked       bool
		rules, aggr int
	}{
		{"role create", &rbacv1.Role{Rules: rules(3)}, nil, true, 3, 0},
		{"role grows", &rbacv1.Role{Rules: rules(5)}, &rbacv1.Role{Rules: rules(3)}, true, 2, 0},
		{"role shrinks", &rbacv1.Role{Rules: rules(1)}, &rbacv1.Role{Rules: rules(3)}, true, -2, 0},
		{"apply creates: old is empty", &rbacv1.Role{Rules: rules(4)}, &rbacv1.Role{}, true, 4, 0},
		// An aggregated role's rules are the hub's write-back: not counted.
		{"clusterrole create aggregated", &rbacv1.ClusterRole{Rules: rules(1), AggregationRule: agg}, nil, true, 0, 1},
		{"aggregated rules written back", &rbacv1.ClusterRole{Rules: rules(9), AggregationRule: agg}, &rbacv1.ClusterRole{AggregationRule: agg}, true, 0, 0},
		{"clusterrole becomes aggregated", &rbacv1.ClusterRole{AggregationRule: agg}, &rbacv1.ClusterRole{Rules: rules(2)}, true, -2, 1},
		{"clusterrole stops aggregating", &rbacv1.ClusterRole{}, &rbacv1.ClusterRole{AggregationRule: agg}, true, 0, -1},
		{"stops aggregating, keeps the written-back rules", &rbacv1.ClusterRole{Rules: rules(4)}, &rbacv1.ClusterRole{Rules: rules(4), AggregationRule: agg}, true, 4, -1},
		{"binding", &rbacv1.RoleBinding{}, nil, false, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := &recordQuota{}
			g := &GuardedStore{quota: q}
			var old []runtime.Object
			if tc.old != nil {
				old = append(old, tc.old)
			}
			if err := g.checkQuota(context.Background(), tc.obj, old...); err != nil {
				t.Fatal(err)
			}
			if q.asked != tc.asked || q.rules != tc.rules || q.aggr != tc.aggr {
				t.Fatalf("asked=%v rules=%d aggregated=%d, want %v %d %d", q.asked, q.rules, q.aggr, tc.asked, tc.rules, tc.aggr)
			}
		})
	}
}

// TestKeepAggregatedRules: a client's write cannot set the rules of an
// aggregated ClusterRole (they would be stored outside the quota); only
// the hub's write-back can. Plain roles keep what was sent.
func TestKeepAggregatedRules(t *testing.T) {
	agg := &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"a": "b"}}}}
	sent := []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}
	stored := []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		obj  *rbacv1.ClusterRole
		old  []runtime.Object
		want int // rules kept
	}{
		{"create", context.Background(), &rbacv1.ClusterRole{Rules: sent, AggregationRule: agg}, nil, 0},
		{"update keeps the stored rules", context.Background(), &rbacv1.ClusterRole{Rules: append(sent, sent...), AggregationRule: agg},
			[]runtime.Object{&rbacv1.ClusterRole{Rules: stored, AggregationRule: agg}}, 1},
		{"the hub's write-back", WithAggregatedRulesWrite(context.Background()), &rbacv1.ClusterRole{Rules: append(sent, sent...), AggregationRule: agg},
			[]runtime.Object{&rbacv1.ClusterRole{Rules: stored, AggregationRule: agg}}, 2},
		{"plain role", context.Background(), &rbacv1.ClusterRole{Rules: sent}, nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := keepAggregatedRules(tc.ctx, tc.obj, tc.old...); err != nil {
				t.Fatal(err)
			}
			if len(tc.obj.Rules) != tc.want {
				t.Fatalf("rules %v, want %d", tc.obj.Rules, tc.want)
			}
		})
	}
	// Rules sent next to an aggregationRule are validated before they are
	// discarded, as upstream validates them before its controller
	// replaces them.
	bad := &rbacv1.ClusterRole{Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}}}, AggregationRule: agg}
	if err := keepAggregatedRules(context.Background(), bad); !apierrors.IsInvalid(err) {
		t.Errorf("invalid rules next to an aggregationRule: %v, want 422", err)
	}
}
