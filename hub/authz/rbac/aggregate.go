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
//
// The result is kept by reference: per aggregated role, the names of the
// plain roles it reaches, never a copy of their rules. A tenant's 30
// aggregated roles over three 14,000-rule roles cost 90 names, not 1.2
// million copied rules (attack review B6b), so memory stays linear in what
// the tenant stored, which the RBAC quota bounds.

// aggregation maps each aggregated ClusterRole of a cluster to the plain
// ClusterRoles whose rules it grants, in name order.
type aggregation map[string][]string

// aggregate computes the aggregation of roles. It reads only its argument,
// a snapshot, so it runs without any lock held: its cost (roots x roles x
// selectors) delays nobody but the callers waiting for this cluster's
// result.
func aggregate(roles map[string]*rbacv1.ClusterRole) aggregation {
	var roots []string
	for name, cr := range roles {
		if cr.AggregationRule != nil {
			roots = append(roots, name)
		}
	}
	if len(roots) == 0 {
		return nil
	}
	names := make([]string, 0, len(roles))
	for name := range roles {
		names = append(names, name)
	}
	slices.Sort(names)

	matches := make(map[string][]string, len(roots))
	for _, root := range roots {
		matches[root] = selected(roles, root, names)
	}
	out := make(aggregation, len(roots))
	for _, root := range roots {
		out[root] = reach(roles, root, matches)
	}
	return out
}

// selected lists, in name order, the other ClusterRoles matched by any of
// root's selectors. An invalid selector matches nothing.
func selected(roles map[string]*rbacv1.ClusterRole, root string, names []string) []string {
	rule := roles[root].AggregationRule
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
	if len(sels) == 0 {
		return nil
	}
	var out []string
	for _, name := range names {
		if name == root {
			continue
		}
		set := labels.Set(roles[name].Labels)
		for _, s := range sels {
			if s.Matches(set) {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// reach walks the match graph from root breadth first and returns the plain
// ClusterRoles with rules it reaches, each once, in name order.
func reach(roles map[string]*rbacv1.ClusterRole, root string, matches map[string][]string) []string {
	var plain []string
	seen := map[string]bool{root: true}
	queue := slices.Clone(matches[root])
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		if roles[name].AggregationRule != nil {
			queue = append(queue, matches[name]...)
			continue
		}
		// A role without rules grants nothing; leaving it out keeps
		// decisions from walking thousands of empty labelled roles. Any
		// later change to it re-aggregates the cluster.
		if len(roles[name].Rules) > 0 {
			plain = append(plain, name)
		}
	}
	slices.Sort(plain)
	return plain
}

// clusterRoleRules returns the rules a ClusterRole grants in this cluster,
// as the rule lists of the roles that hold them: one for a plain role, one
// per reached role for an aggregated one. The lists are the index's own and
// must not be modified. A reached role deleted or turned aggregated since
// the aggregation was computed contributes nothing: a stale aggregation can
// lag behind a new grant, never resurrect a deleted role's rules.
func (ci *clusterIndex) clusterRoleRules(name string) ([][]rbacv1.PolicyRule, bool) {
	cr, ok := ci.clusterRoles[name]
	if !ok {
		return nil, false
	}
	if cr.AggregationRule == nil {
		return [][]rbacv1.PolicyRule{cr.Rules}, true
	}
	refs := ci.aggregated[name]
	out := make([][]rbacv1.PolicyRule, 0, len(refs))
	for _, ref := range refs {
		if r, ok := ci.clusterRoles[ref]; ok && r.AggregationRule == nil {
			out = append(out, r.Rules)
		}
	}
	return out, true
}

// flatten copies rule lists into one list without duplicates, for callers
// that keep the rules (RoleRefRules). Duplicates are found through a set of
// canonical rule keys, so the cost is linear in the rules: a pairwise
// comparison would be quadratic in a number the tenant controls.
func flatten(lists [][]rbacv1.PolicyRule) []rbacv1.PolicyRule {
	if len(lists) == 1 {
		return slices.Clone(lists[0])
	}
	var (
		out  []rbacv1.PolicyRule
		have = map[string]struct{}{}
		b    strings.Builder
	)
	for _, rules := range lists {
		for i := range rules {
			k := ruleKey(&b, &rules[i])
			if _, dup := have[k]; !dup {
				have[k] = struct{}{}
				out = append(out, rules[i])
			}
		}
	}
	return out
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
