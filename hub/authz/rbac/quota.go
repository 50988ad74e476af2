package rbac

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// Default RBAC quota of a workspace: far above what a real workspace
// stores (a bootstrapped one has about 40 rules and 3 aggregated roles;
// upstream's whole bootstrap policy about 600 rules), far below what costs
// the hub noticeable memory or aggregation time.
const (
	DefaultMaxRules      = 20000
	DefaultMaxAggregated = 100
)

// QuotaName names the quota in refusals, where upstream names the
// ResourceQuota object.
const QuotaName = "workspace-rbac"

// Quota bounds what one workspace's Roles and ClusterRoles may cost the
// hub. kube-apiserver has no such bound: its tenants are its
// administrators. Here every person administers a home workspace, and
// every rule stored is held in the hub's memory and walked by aggregation,
// so without a bound one tenant degrades all (attack review B6b).
//
// The count comes from the RBAC index, which follows storage through
// watches: writes in flight at the same moment are each checked against
// the usage before any of them, so a burst of concurrent writes can
// overshoot the bound (each write by at most the bound itself) until the
// index catches up, after which further growth is refused.
type Quota struct {
	RBAC *Authorizer
	// MaxRules bounds the rules of a workspace's Roles and ClusterRoles
	// together; MaxAggregated its ClusterRoles with an aggregationRule.
	// Zero means no bound.
	MaxRules, MaxAggregated int
	// ExemptUsers and ExemptGroups (nil: system:masters) are the hub's
	// administrators, who are not bound.
	ExemptUsers, ExemptGroups []string
}

// CheckQuota refuses a write of resource gr, object name, that adds
// addRules rules and addAggregated aggregated ClusterRoles to the
// workspace of ctx (negative when the write shrinks it), with the 403
// "exceeded quota" a ResourceQuota answers upstream. A write that adds
// nothing always passes, so a workspace over a lowered bound can shrink.
func (q Quota) CheckQuota(ctx context.Context, gr schema.GroupResource, name string, addRules, addAggregated int) error {
	if (addRules <= 0 || q.MaxRules <= 0) && (addAggregated <= 0 || q.MaxAggregated <= 0) {
		return nil
	}
	if q.exempt(ctx) {
		return nil
	}
	if q.RBAC == nil {
		return apierrors.NewInternalError(errNoChecker)
	}
	used, err := q.RBAC.Usage(ctx)
	if err != nil {
		// Fail closed: a write that adds RBAC objects is not admitted
		// without knowing what the workspace holds already.
		return apierrors.NewForbidden(gr, name, fmt.Errorf("the RBAC quota cannot be evaluated: %w", err))
	}
	if addRules > 0 && q.MaxRules > 0 && used.Rules+addRules > q.MaxRules {
		return exceeded(gr, name, "rules", addRules, used.Rules, q.MaxRules)
	}
	if addAggregated > 0 && q.MaxAggregated > 0 && used.Aggregated+addAggregated > q.MaxAggregated {
		return exceeded(gr, name, "aggregatedclusterroles", addAggregated, used.Aggregated, q.MaxAggregated)
	}
	return nil
}

// exceeded words the refusal as upstream's quota admission does.
func exceeded(gr schema.GroupResource, name, what string, requested, used, limited int) error {
	return apierrors.NewForbidden(gr, name, fmt.Errorf("exceeded quota: %s, requested: %s=%d, used: %s=%d, limited: %s=%d",
		QuotaName, what, requested, what, used, what, limited))
}

func (q Quota) exempt(ctx context.Context) bool {
	u, ok := request.UserFrom(ctx)
	if !ok || u == nil {
		return false
	}
	groups := q.ExemptGroups
	if groups == nil {
		groups = []string{user.SystemPrivilegedGroup}
	}
	return hubPrivileged(u, q.ExemptUsers, groups)
}
