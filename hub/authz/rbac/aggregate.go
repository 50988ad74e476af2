package rbac

import (
	"slices"
	"strconv"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Aggregation. Upstream, a controller rewrites the rules of a ClusterRole
// that carries an aggregationRule with the union of the rules of the other
// ClusterRoles its selectors match, stomping whatever rules it had. Wharf
// computes the converged result of that controller here, per cluster, so that
// authorization never depends on a controller having caught up and never
// mixes in ClusterRoles from another workspace.
//
// The converged state is a fixed point: an aggregated role holds the rules of
// every plain (non-aggregated) ClusterRole reachable through the "selector
// matches" graph, itself excluded. Walking that graph per aggregated role
// gives the same answer for chains and cycles alike.

// reaggregate recomputes the effective rules of every aggregated ClusterRole
// in the cluster. It runs on every ClusterRole change; its cost depends on the
// size of this cluster only.
func (ci *clusterIndex) reaggregate() {
	clear(ci.aggregated)
	var roots []string
	for name, cr := range ci.clusterRoles {
		if cr.AggregationRule != nil {
			roots = append(roots, name)
		}
	}
	if len(roots) == 0 {
		return
	}
	names := make([]string, 0, len(ci.clusterRoles))
	for name := range ci.clusterRoles {
		names = append(names, name)
	}
	slices.Sort(names)

	matches := make(map[string][]string, len(roots))
	for _, root := range roots {
		matches[root] = ci.selected(root, names)
	}
	for _, root := range roots {
		ci.aggregated[root] = ci.collect(root, matches)
	}
}

// selected lists, in name order, the other ClusterRoles matched by any of
// root's selectors. An invalid selector matches nothing.
func (ci *clusterIndex) selected(root string, names []string) []string {
	rule := ci.clusterRoles[root].AggregationRule
	var sels []labels.Selector
	for i := range rule.ClusterRoleSelectors {
		// As upstream, an empty selector selects every ClusterRole; that is
		// why setting an aggregationRule needs full authority (see
		// EscalationChecker.CheckClusterRole).
		s, err := metav1.LabelSelectorAsSelector(&rule.ClusterRoleSelectors[i])
		if err != nil {
			continue
		}
		sels = append(sels, s)
	}
	var out []string
	for _, name := range names {
		if name == root {
			continue
		}
		set := labels.Set(ci.clusterRoles[name].Labels)
		for _, s := range sels {
			if s.Matches(set) {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// collect walks the match graph from root breadth first and unions the rules
// of the plain ClusterRoles it reaches, without duplicates. Duplicates are
// found through a set of canonical rule keys: a pairwise comparison would be
// quadratic in the number of rules, which a tenant controls.
func (ci *clusterIndex) collect(root string, matches map[string][]string) []rbacv1.PolicyRule {
	var rules []rbacv1.PolicyRule
	have := map[string]struct{}{}
	seen := map[string]bool{root: true}
	queue := slices.Clone(matches[root])
	var b strings.Builder
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		cr := ci.clusterRoles[name]
		if cr.AggregationRule != nil {
			queue = append(queue, matches[name]...)
			continue
		}
		for _, r := range cr.Rules {
			k := ruleKey(&b, &r)
			if _, dup := have[k]; !dup {
				have[k] = struct{}{}
				rules = append(rules, r)
			}
		}
	}
	return rules
}

// ruleKey encodes a rule so that two rules have the same key exactly when
// they are deeply equal: every list is length-prefixed and every string
// quoted, so no choice of values can make two different rules collide.
func ruleKey(b *strings.Builder, r *rbacv1.PolicyRule) string {
	b.Reset()
	for _, list := range [][]string{r.Verbs, r.APIGroups, r.Resources, r.ResourceNames, r.NonResourceURLs} {
		if list == nil {
			// nil and empty differ under reflect.DeepEqual; keep that.
			b.WriteString("n")
			continue
		}
		b.WriteString(strconv.Itoa(len(list)))
		for _, v := range list {
			b.WriteString(strconv.Quote(v))
		}
		b.WriteByte(';')
	}
	return b.String()
}

// clusterRoleRules returns the rules a ClusterRole grants in this cluster.
func (ci *clusterIndex) clusterRoleRules(name string) ([]rbacv1.PolicyRule, bool) {
	cr, ok := ci.clusterRoles[name]
	if !ok {
		return nil, false
	}
	if cr.AggregationRule != nil {
		return ci.aggregated[name], true
	}
	return cr.Rules, true
}
