package registry

import (
	"context"
	"reflect"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// EscalationChecker is what guards RBAC writes (implemented by
// hub/authz/rbac.EscalationChecker). namespace is the request's namespace
// ("" for the cluster-scoped kinds), name the object's, for messages.
type EscalationChecker interface {
	CheckRole(ctx context.Context, namespace, name string, rules []rbacv1.PolicyRule) error
	CheckClusterRole(ctx context.Context, name string, rules []rbacv1.PolicyRule, aggregated bool) error
	CheckBinding(ctx context.Context, namespace, name string, ref rbacv1.RoleRef) error
}

// QuotaChecker bounds the RBAC objects of a workspace (implemented by
// hub/authz/rbac.Quota). addRules and addAggregated are what the write adds
// to the workspace of ctx, negative when it shrinks it.
type QuotaChecker interface {
	CheckQuota(ctx context.Context, gr schema.GroupResource, name string, addRules, addAggregated int) error
}

// GuardedStore refuses Role, ClusterRole and binding writes that would grant
// permissions the caller does not hold, with upstream's rules
// (k8s.io/kubernetes pkg/registry/rbac/*/policybased):
//
//   - create checks the object as sent, before the store sees it;
//   - update, and so patch, server-side apply (update-with-create) and
//     their dry runs, checks the new object inside the store's
//     optimistic-concurrency loop, against the stored one;
//   - the only update exempt is one that changes nothing but the fields
//     garbage collection writes (ownerReferences, finalizers; managedFields
//     and selfLink are bookkeeping). Labels are NOT exempt: they drive
//     ClusterRole aggregation, so relabelling a role can grant its rules to
//     everyone bound to an aggregated role.
//
// Role and ClusterRole writes are also held to the workspace's RBAC quota
// on the same paths (create, update, patch, server-side apply, dry runs):
// the quota sees what the write adds, the new object less the stored one.
type GuardedStore struct {
	*Store
	check EscalationChecker
	quota QuotaChecker
}

var _ rest.StandardStorage = &GuardedStore{}

// Guard wraps the store of one of the four RBAC resources. q may be nil:
// no quota.
func Guard(s *Store, c EscalationChecker, q QuotaChecker) *GuardedStore {
	return &GuardedStore{Store: s, check: c, quota: q}
}

// Create implements rest.Creater.
func (g *GuardedStore) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	if err := g.guard(ctx, obj); err != nil {
		return nil, err
	}
	return g.Store.Create(ctx, obj, createValidation, options)
}

// Update implements rest.Updater. The check runs on the object the update
// produces, before admission, as upstream's WrapUpdatedObjectInfo does. On
// update-with-create the store hands the transformer an empty object as the
// old one, so a created object is always checked in full.
func (g *GuardedStore) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	guarded := rest.WrapUpdatedObjectInfo(objInfo, func(ctx context.Context, obj, old runtime.Object) (runtime.Object, error) {
		if onlyGCFields(obj, old) {
			return obj, nil
		}
		if err := g.guard(ctx, obj, old); err != nil {
			return nil, err
		}
		return obj, nil
	})
	return g.Store.Update(ctx, name, guarded, createValidation, updateValidation, forceAllowCreate, options)
}

// guard checks one write of obj; old is the stored object on update.
// Namespaces come from the request, as upstream: the object's may still be
// empty, to be filled in from the request by the store.
func (g *GuardedStore) guard(ctx context.Context, obj runtime.Object, old ...runtime.Object) error {
	if err := keepAggregatedRules(ctx, obj, old...); err != nil {
		return err
	}
	if err := g.checkQuota(ctx, obj, old...); err != nil {
		return err
	}
	ns, _ := request.NamespaceFrom(ctx)
	switch o := obj.(type) {
	case *rbacv1.Role:
		return g.check.CheckRole(ctx, ns, o.Name, o.Rules)
	case *rbacv1.ClusterRole:
		// Changing or dropping an aggregationRule needs the same authority
		// as setting one: it can gather anything, or stop a role from being
		// tightened.
		aggregated := hasAggregationRule(o)
		for _, p := range old {
			if pc, ok := p.(*rbacv1.ClusterRole); ok && hasAggregationRule(pc) {
				aggregated = true
			}
		}
		return g.check.CheckClusterRole(ctx, o.Name, o.Rules, aggregated)
	case *rbacv1.RoleBinding:
		return g.check.CheckBinding(ctx, ns, o.Name, o.RoleRef)
	case *rbacv1.ClusterRoleBinding:
		return g.check.CheckBinding(ctx, "", o.Name, o.RoleRef)
	}
	return apierrors.NewBadRequest("unexpected object in an RBAC store")
}

// checkQuota asks the quota about what obj adds over old. Bindings cost
// the index little and are not counted.
func (g *GuardedStore) checkQuota(ctx context.Context, obj runtime.Object, old ...runtime.Object) error {
	if g.quota == nil {
		return nil
	}
	var (
		gr            schema.GroupResource
		name          string
		rules, aggreg int
	)
	switch o := obj.(type) {
	case *rbacv1.Role:
		gr, name, rules = rbacv1.Resource("roles"), o.Name, len(o.Rules)
		for _, p := range old {
			if pr, ok := p.(*rbacv1.Role); ok && pr != nil {
				rules -= len(pr.Rules)
			}
		}
	case *rbacv1.ClusterRole:
		// Counted as the index counts them (rbac.UsageOfClusterRole): an
		// aggregated role's rules are the hub's write-back, not the
		// tenant's, and are bounded apart.
		gr, name = rbacv1.Resource("clusterroles"), o.Name
		rules, aggreg = clusterRoleCost(o)
		for _, p := range old {
			if pc, ok := p.(*rbacv1.ClusterRole); ok && pc != nil {
				r, a := clusterRoleCost(pc)
				rules, aggreg = rules-r, aggreg-a
			}
		}
	default:
		return nil
	}
	return g.quota.CheckQuota(ctx, gr, name, rules, aggreg)
}

// clusterRoleCost is what a ClusterRole counts against the RBAC quota.
func clusterRoleCost(cr *rbacv1.ClusterRole) (rules, aggregated int) {
	if cr.AggregationRule != nil {
		return 0, 1
	}
	return len(cr.Rules), 0
}

// hasAggregationRule is upstream's test: a rule without selectors selects
// nothing and gathers nothing.
func hasAggregationRule(cr *rbacv1.ClusterRole) bool {
	return cr.AggregationRule != nil && len(cr.AggregationRule.ClusterRoleSelectors) > 0
}

// onlyGCFields reports whether obj differs from old in nothing but the
// metadata the garbage collector and the field manager write. Such updates
// grant nothing new, and the collector must be able to make them without
// escalation rights.
func onlyGCFields(obj, old runtime.Object) bool {
	if old == nil || reflect.ValueOf(old).IsNil() {
		return false
	}
	cp := obj.DeepCopyObject()
	cm, err := meta.Accessor(cp)
	if err != nil {
		return false
	}
	om, err := meta.Accessor(old)
	if err != nil {
		return false
	}
	cm.SetOwnerReferences(om.GetOwnerReferences())
	cm.SetFinalizers(om.GetFinalizers())
	cm.SetSelfLink(om.GetSelfLink())
	cm.SetManagedFields(om.GetManagedFields())
	// The hub stores the v1 types themselves, which carry TypeMeta: the
	// patched object has it set, the stored one not. Upstream compares
	// internal objects, which have none, so neither does this.
	cp.GetObjectKind().SetGroupVersionKind(old.GetObjectKind().GroupVersionKind())
	return equality.Semantic.DeepEqual(cp, old)
}
