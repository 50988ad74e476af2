package registry

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/wharfhub/wharf/hub/registry/validation"
)

// The .rules of a ClusterRole with an aggregationRule are the hub's: its
// aggregation write-back (hub/authz/rbac writeback.go) stores there the
// rules the role aggregates, as upstream's clusterrole-aggregation
// controller does, and the RBAC quota does not count them against the
// workspace. Upstream that controller overwrites whatever a client stored
// there; here a client's write keeps the stored rules instead (none on
// create) and the write-back follows at once, so what a tenant sends there
// is neither granted (aggregated roles grant what they aggregate) nor
// stored, and cannot be used to store rules beyond the quota.

type aggregatedRulesWriteKey struct{}

// WithAggregatedRulesWrite marks ctx as the hub's write-back of aggregated
// rules: only such a write may set the .rules of an aggregated ClusterRole.
// No request can carry it; the hub sets it in process.
func WithAggregatedRulesWrite(ctx context.Context) context.Context {
	return context.WithValue(ctx, aggregatedRulesWriteKey{}, true)
}

func isAggregatedRulesWrite(ctx context.Context) bool {
	v, _ := ctx.Value(aggregatedRulesWriteKey{}).(bool)
	return v
}

// keepAggregatedRules makes a client's write of an aggregated ClusterRole
// keep the stored rules (old is the stored object, absent on create). The
// rules sent are validated first, as upstream validates them before its
// controller replaces them: invalid rules are a 422 here too.
func keepAggregatedRules(ctx context.Context, obj runtime.Object, old ...runtime.Object) error {
	cr, ok := obj.(*rbacv1.ClusterRole)
	if !ok || cr.AggregationRule == nil || isAggregatedRulesWrite(ctx) {
		return nil
	}
	if errs := validation.ClusterRole(cr); len(errs) > 0 {
		return apierrors.NewInvalid(rbacv1.SchemeGroupVersion.WithKind("ClusterRole").GroupKind(), cr.Name, errs)
	}
	cr.Rules = nil
	for _, p := range old {
		if pc, ok := p.(*rbacv1.ClusterRole); ok && pc != nil {
			cr.Rules = pc.Rules
		}
	}
	return nil
}
