package server

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/wharfhub/wharf/hub/authz/rbac"
	"github.com/wharfhub/wharf/hub/cluster"
	"github.com/wharfhub/wharf/hub/registry"
)

// aggregationFieldManager is upstream's controller's field manager, so
// managedFields read as on kube-apiserver.
const aggregationFieldManager = "clusterrole-aggregation-controller"

// aggregatedRulesWriter returns the RBAC authorizer's write-back: it
// updates one aggregated ClusterRole's .rules through the hub's own
// (guarded) ClusterRole storage, in that role's logical cluster only, as a
// hub identity. groups are the hub's privileged groups, so the write needs
// no escalation grant.
func aggregatedRulesWriter(store rest.Updater, groups []string) rbac.RulesWriter {
	hub := &user.DefaultInfo{Name: "system:wharf:clusterrole-aggregation", Groups: append([]string{user.SystemPrivilegedGroup}, groups...)}
	return func(ctx context.Context, id cluster.ID, name string, rules []rbacv1.PolicyRule) error {
		ctx = request.WithUser(ctx, hub)
		ctx = request.WithNamespace(cluster.WithCluster(ctx, id), metav1.NamespaceNone)
		ctx = registry.WithAggregatedRulesWrite(ctx)
		// The update starts from the stored role (no new object is
		// given): only .rules change.
		set := rest.DefaultUpdatedObjectInfo(nil, func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
			cr, ok := old.(*rbacv1.ClusterRole)
			if !ok || cr == nil {
				return nil, fmt.Errorf("unexpected stored object %T", old)
			}
			if cr.AggregationRule == nil {
				// No longer aggregated: its rules are the tenant's now.
				return nil, errNotAggregated
			}
			cr = cr.DeepCopy()
			cr.Rules = rules
			return cr, nil
		})
		_, _, err := store.Update(ctx, name, set, nil, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{FieldManager: aggregationFieldManager})
		switch {
		case err == nil, apierrors.IsNotFound(err), err == errNotAggregated:
			// Gone or changed meanwhile: its next event re-aggregates.
			return nil
		case apierrors.IsConflict(err):
			return fmt.Errorf("ClusterRole %q changed while writing its aggregated rules: %w", name, err)
		}
		return fmt.Errorf("writing the aggregated rules of ClusterRole %q: %w", name, err)
	}
}

var errNotAggregated = fmt.Errorf("not an aggregated ClusterRole")
