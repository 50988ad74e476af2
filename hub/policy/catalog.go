package policy

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/wharfhub/wharf/hub/cluster"
)

// CatalogReader names the root ClusterRole and ClusterRoleBinding that let
// every authenticated user read the provider catalog.
const CatalogReader = "wharf:catalog-reader"

// EnsureCatalogReader creates, in root, the role granting get, list and
// watch on catalogentries and binds it to system:authenticated. Existing
// objects are left alone.
func EnsureCatalogReader(ctx context.Context, s Stores, root cluster.ID) error {
	ctx = request.WithUser(ctx, &user.DefaultInfo{Name: "system:wharf:bootstrap", Groups: []string{user.SystemPrivilegedGroup}})
	ctx = request.WithNamespace(cluster.WithCluster(ctx, root), metav1.NamespaceNone)
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: CatalogReader},
		Rules:      []rbacv1.PolicyRule{rule(readVerbs, "providers.wharf.dev", "catalogentries")},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: CatalogReader},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: user.AllAuthenticated}},
		RoleRef:    rbacv1.RoleRef{Kind: "ClusterRole", APIGroup: rbacv1.GroupName, Name: CatalogReader},
	}
	if err := create(ctx, s.ClusterRoles, []runtime.Object{role}); err != nil {
		return err
	}
	return create(ctx, s.ClusterRoleBindings, []runtime.Object{binding})
}
