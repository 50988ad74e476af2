package registry

import (
	"context"
	"reflect"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
)

// EscalationChecker is what guards RBAC writes (implemented by
// hub/authz/rbac.EscalationChecker).
type EscalationChecker interface {
	CheckRole(ctx context.Context, namespace, name string, rules []rbacv1.PolicyRule) error
	CheckClusterRole(ctx context.Context, name string, rules []rbacv1.PolicyRule, aggregated bool) error
	CheckBinding(ctx context.Context, namespace, name string, ref rbacv1.RoleRef) error
}

// GuardedStore refuses Role, ClusterRole and binding writes that would grant
// permissions the caller does not hold, as upstream's RBAC registry does.
// The checks run as create/update validation, on the final object, inside
// the store's optimistic-concurrency loop.
type GuardedStore struct {
	*Store
	check EscalationChecker
}

var _ rest.StandardStorage = &GuardedStore{}

// Guard wraps the store of one of the four RBAC resources.
func Guard(s *Store, c EscalationChecker) *GuardedStore { return &GuardedStore{Store: s, check: c} }

// Create implements rest.Creater.
func (g *GuardedStore) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	return g.Store.Create(ctx, obj, func(ctx context.Context, obj runtime.Object) error {
		if err := g.guard(ctx, obj, nil); err != nil {
			return err
		}
		if createValidation != nil {
			return createValidation(ctx, obj)
		}
		return nil
	}, options)
}

// Update implements rest.Updater.
func (g *GuardedStore) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	guardedCreate := func(ctx context.Context, obj runtime.Object) error {
		if err := g.guard(ctx, obj, nil); err != nil {
			return err
		}
		if createValidation != nil {
			return createValidation(ctx, obj)
		}
		return nil
	}
	guardedUpdate := func(ctx context.Context, obj, old runtime.Object) error {
		if err := g.guard(ctx, obj, old); err != nil {
			return err
		}
		if updateValidation != nil {
			return updateValidation(ctx, obj, old)
		}
		return nil
	}
	return g.Store.Update(ctx, name, objInfo, guardedCreate, guardedUpdate, forceAllowCreate, options)
}

// guard checks a write. An update that leaves the granted permissions as
// they were (metadata only: labels, finalizers, ownerReferences) passes, so
// garbage collection and labelling never need escalation rights.
func (g *GuardedStore) guard(ctx context.Context, obj, old runtime.Object) error {
	switch o := obj.(type) {
	case *rbacv1.Role:
		if p, ok := old.(*rbacv1.Role); ok && reflect.DeepEqual(p.Rules, o.Rules) {
			return nil
		}
		return g.check.CheckRole(ctx, o.Namespace, o.Name, o.Rules)
	case *rbacv1.ClusterRole:
		p, ok := old.(*rbacv1.ClusterRole)
		if ok && reflect.DeepEqual(p.Rules, o.Rules) && reflect.DeepEqual(p.AggregationRule, o.AggregationRule) {
			return nil
		}
		aggregated := o.AggregationRule != nil || (ok && p.AggregationRule != nil)
		return g.check.CheckClusterRole(ctx, o.Name, o.Rules, aggregated)
	case *rbacv1.RoleBinding:
		if p, ok := old.(*rbacv1.RoleBinding); ok && p.RoleRef == o.RoleRef && reflect.DeepEqual(p.Subjects, o.Subjects) {
			return nil
		}
		return g.check.CheckBinding(ctx, o.Namespace, o.Name, o.RoleRef)
	case *rbacv1.ClusterRoleBinding:
		if p, ok := old.(*rbacv1.ClusterRoleBinding); ok && p.RoleRef == o.RoleRef && reflect.DeepEqual(p.Subjects, o.Subjects) {
			return nil
		}
		return g.check.CheckBinding(ctx, "", o.Name, o.RoleRef)
	}
	return apierrors.NewBadRequest("unexpected object in an RBAC store")
}
