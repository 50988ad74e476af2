package enablement

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	providersv1alpha1 "github.com/wharfhub/wharf/hub/apis/providers/v1alpha1"
)

// edgeProxyObjects are the exact grant a binding makes for a provider with
// EdgeProxyAccess: the proxy verb on edges, and access to the workspace
// (so the backend proxy lets it reach the edges egress there), to the
// provider's identity.
func edgeProxyObjects(provider string) (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	name := edgeProxyGrant(provider)
	labels := map[string]string{"providers.wharf.dev/provider": provider}
	return &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Rules: []rbacv1.PolicyRule{
				{Verbs: []string{"proxy"}, APIGroups: []string{"edges.wharf.dev"}, Resources: []string{"edges"}},
				// The edges egress is reached through the backend proxy,
				// which lets a caller act in a workspace only with the
				// "access" verb there (kcp's content access).
				{Verbs: []string{"access"}, NonResourceURLs: []string{"/"}},
			},
		}, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: providersv1alpha1.ProviderUser(provider)}},
			RoleRef:    rbacv1.RoleRef{Kind: "ClusterRole", APIGroup: rbacv1.GroupName, Name: name},
		}
}

// grantEdgeProxy makes the workspace's grant exactly edgeProxyObjects. The
// names are predictable and the workspace's admin may have created them
// first (with rules of their choosing, or other subjects): taking an
// existing object as done would make the hub bind the provider to more
// than the binding means, so an existing one is rewritten to the grant
// (or, for a binding whose immutable roleRef differs, replaced).
func (c *Controller) grantEdgeProxy(ctx context.Context, provider string) error {
	role, binding := edgeProxyObjects(provider)
	if err := converge(ctx, c.cfg.ClusterRoles, role, func(obj runtime.Object) (bool, bool) {
		cur := obj.(*rbacv1.ClusterRole)
		same := apiequality.Semantic.DeepEqual(cur.Rules, role.Rules) && cur.AggregationRule == nil
		cur.Rules, cur.AggregationRule = role.Rules, nil
		return same, false
	}); err != nil {
		return fmt.Errorf("granting edge proxy access to %s: %w", provider, err)
	}
	if err := converge(ctx, c.cfg.RoleBindings, binding, func(obj runtime.Object) (bool, bool) {
		cur := obj.(*rbacv1.ClusterRoleBinding)
		same := apiequality.Semantic.DeepEqual(cur.Subjects, binding.Subjects) && cur.RoleRef == binding.RoleRef
		cur.Subjects = binding.Subjects
		return same, cur.RoleRef != binding.RoleRef
	}); err != nil {
		return fmt.Errorf("granting edge proxy access to %s: %w", provider, err)
	}
	return nil
}

// converge creates want, or brings the stored object of its name to it:
// fix sets the wanted fields on a copy of the stored object and reports
// whether they were right already, and whether the object must be
// replaced instead (an immutable field differs).
func converge(ctx context.Context, s RBACStore, want runtime.Object, fix func(cur runtime.Object) (same, replace bool)) error {
	m, err := meta.Accessor(want)
	if err != nil {
		return err
	}
	name := m.GetName()
	for range 5 {
		_, err := s.Create(ctx, want.DeepCopyObject(), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
		obj, err := s.Get(ctx, name, &metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		cur := obj.DeepCopyObject()
		same, replace := fix(cur)
		switch {
		case same:
			return nil
		case replace:
			_, _, err = s.Delete(ctx, name, rest.ValidateAllObjectFunc, &metav1.DeleteOptions{})
		default:
			_, _, err = s.Update(ctx, name, rest.DefaultUpdatedObjectInfo(cur), rest.ValidateAllObjectFunc,
				rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
			if err == nil {
				return nil
			}
		}
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
	}
	return fmt.Errorf("%s keeps changing under the controller", name)
}
