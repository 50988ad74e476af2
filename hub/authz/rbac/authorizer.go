package rbac

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	rbacv1 "k8s.io/api/rbac/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/wharfhub/wharf/hub/cluster"
)

var (
	_ authorizer.Authorizer   = (*Authorizer)(nil)
	_ authorizer.RuleResolver = (*Authorizer)(nil)
)

// Authorizer evaluates rbac/v1 policy per logical cluster. Build it with New,
// start it with Run and wait for HasSynced before serving.
type Authorizer struct {
	idx *index
	// synced reports, per informer, that its event handler has seen the
	// initial list; empty only for the in-package test constructor.
	synced    []cache.InformerSynced
	informers []cache.SharedIndexInformer
	// queue holds clusters whose aggregation is stale; nil (aggregate at
	// once) only for the in-package test constructor.
	queue workqueue.TypedInterface[cluster.ID]
	// ready latches HasSynced: once the first full index is aggregated, a
	// tenant's pending re-aggregation must not turn every workspace's
	// decisions into NoOpinion.
	ready atomic.Bool

	// writeBack, when set, stores aggregated rules in aggregated
	// ClusterRoles (writeback.go); writeBackQueue holds the clusters to
	// visit and writeBackBudget bounds the rules written per cluster.
	writeBack       RulesWriter
	writeBackQueue  workqueue.TypedRateLimitingInterface[cluster.ID]
	writeBackBudget int
}

// newAuthorizer returns an authorizer over an empty index with no informers,
// for tests that fill the index directly.
func newAuthorizer() *Authorizer {
	return &Authorizer{idx: newIndex()}
}

// HasSynced reports whether every informer has delivered its initial list to
// the index and the aggregated ClusterRoles of that list are computed.
// Until then every decision is NoOpinion. Once true it stays true.
func (a *Authorizer) HasSynced() bool {
	if a.ready.Load() {
		return true
	}
	for _, s := range a.synced {
		if !s() {
			return false
		}
	}
	if a.idx.anyStale() {
		return false
	}
	a.ready.Store(true)
	return true
}

// Usage returns what the RBAC objects of the cluster of ctx count against
// the RBAC quota, as far as the index has seen them.
func (a *Authorizer) Usage(ctx context.Context) (Usage, error) {
	id, why := requestCluster(ctx)
	if why != "" {
		return Usage{}, errors.New(why)
	}
	if !a.HasSynced() {
		return Usage{}, errors.New("RBAC: policy index not synced yet")
	}
	var u Usage
	a.idx.read(id, func(ci *clusterIndex) { u = ci.usage })
	return u, nil
}

// requestCluster returns the cluster a decision is scoped to, or a reason to
// abstain. Wildcard requests never get an RBAC grant: only the privileged
// authorizer ahead of this one may admit them.
func requestCluster(ctx context.Context) (cluster.ID, string) {
	if cluster.IsWildcard(ctx) {
		return "", "RBAC: cross-workspace (wildcard) requests are not authorized by workspace RBAC"
	}
	id, ok := cluster.From(ctx)
	if !ok {
		return "", "RBAC: request has no logical cluster"
	}
	return id, ""
}

// Authorize allows a request when a rule bound to its user in the request's
// cluster permits it, and has no opinion otherwise. It never denies outright,
// so the chain's final deny applies.
func (a *Authorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	id, why := requestCluster(ctx)
	if why != "" {
		return authorizer.DecisionNoOpinion, why, nil
	}
	u := attrs.GetUser()
	if u == nil {
		return authorizer.DecisionNoOpinion, "", errors.New("rbac: no user on request")
	}
	if !a.HasSynced() {
		return authorizer.DecisionNoOpinion, "RBAC: policy index not synced yet", nil
	}

	var (
		allowedBy fmt.Stringer
		errs      []error
	)
	a.idx.read(id, func(ci *clusterIndex) {
		ci.visitRulesFor(u, attrs.GetNamespace(), func(src fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool {
			if rule != nil && RuleAllows(attrs, rule) {
				allowedBy = src
				return false
			}
			if err != nil {
				errs = append(errs, err)
			}
			return true
		})
	})
	if allowedBy != nil {
		return authorizer.DecisionAllow, "RBAC: allowed by " + allowedBy.String(), nil
	}
	if logV := klog.V(5); logV.Enabled() {
		logV.InfoS("RBAC: no rule allows the request", "cluster", id, "user", u.GetName(), "groups", u.GetGroups(),
			"verb", attrs.GetVerb(), "resource", attrs.GetResource(), "subresource", attrs.GetSubresource(),
			"apiGroup", attrs.GetAPIGroup(), "namespace", attrs.GetNamespace(), "name", attrs.GetName(), "path", attrs.GetPath())
	}
	if len(errs) > 0 {
		return authorizer.DecisionNoOpinion, fmt.Sprintf("RBAC: %v", utilerrors.NewAggregate(errs)), nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// ConditionsAwareAuthorize wraps Authorize: RBAC decisions are unconditional.
func (a *Authorizer) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attrs))
}

// EvaluateConditions is unsupported: this authorizer never returns conditions.
func (a *Authorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// Rules returns every rule granted to u in namespace (cluster-wide grants
// only when namespace is empty) in the cluster of ctx. Rules of bindings
// whose role is missing are left out and reported in the error; the rules
// returned are still valid, since RBAC is purely additive.
func (a *Authorizer) Rules(ctx context.Context, u user.Info, namespace string) ([]rbacv1.PolicyRule, error) {
	id, why := requestCluster(ctx)
	if why != "" {
		return nil, errors.New(why)
	}
	if u == nil {
		return nil, errors.New("rbac: no user")
	}
	if !a.HasSynced() {
		return nil, errors.New("RBAC: policy index not synced yet")
	}
	var (
		rules []rbacv1.PolicyRule
		errs  []error
	)
	a.idx.read(id, func(ci *clusterIndex) {
		ci.visitRulesFor(u, namespace, func(_ fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool {
			if rule != nil {
				rules = append(rules, *rule)
			}
			if err != nil {
				errs = append(errs, err)
			}
			return true
		})
	})
	return rules, utilerrors.NewAggregate(errs)
}

// RulesFor implements authorizer.RuleResolver for SelfSubjectRulesReview.
// The list is marked incomplete when the request has no single cluster or
// the index has not synced, so clients do not read an empty list as "none".
func (a *Authorizer) RulesFor(ctx context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	if _, why := requestCluster(ctx); why != "" || !a.HasSynced() {
		_, err := a.Rules(ctx, u, namespace)
		return nil, nil, true, err
	}
	rules, err := a.Rules(ctx, u, namespace)
	var (
		res    []authorizer.ResourceRuleInfo
		nonRes []authorizer.NonResourceRuleInfo
	)
	for _, r := range rules {
		if len(r.Resources) > 0 {
			res = append(res, &authorizer.DefaultResourceRuleInfo{
				Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames,
			})
		}
		if len(r.NonResourceURLs) > 0 {
			nonRes = append(nonRes, &authorizer.DefaultNonResourceRuleInfo{
				Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs,
			})
		}
	}
	return res, nonRes, false, err
}

// Binds reports whether any ClusterRoleBinding or RoleBinding of the
// request's cluster names u, by user name or one of its groups: whether u
// holds any grant there at all. The hub uses it to decide whether a caller
// may learn that a workspace exists (uniform denials, issue 11.9); it is
// false for a cluster the index does not know, so a missing workspace and
// one without a grant for u look the same.
func (a *Authorizer) Binds(ctx context.Context, u user.Info) bool {
	id, why := requestCluster(ctx)
	if why != "" || u == nil || !a.HasSynced() {
		return false
	}
	found := false
	a.idx.read(id, func(ci *clusterIndex) { found = ci.binds(u) })
	return found
}
