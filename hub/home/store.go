package home

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/klog/v2"

	tenancyv1alpha1 "github.com/wharfhub/wharf/hub/apis/tenancy/v1alpha1"
	"github.com/wharfhub/wharf/hub/cluster"
)

// checkOwner reads the home Workspace at p and fails unless name owns it,
// waiting up to patience for a Workspace that is not stored yet.
func (m *Manager) checkOwner(ctx context.Context, store Store, p cluster.Path, name string, patience time.Duration) error {
	usersInfo, err := m.index.Resolve(ctx, string(UsersPath))
	if err != nil {
		return fmt.Errorf("resolving %s: %w", UsersPath, err)
	}
	_, label, _ := p.Parent()
	var ws *tenancyv1alpha1.Workspace
	deadline := time.Now().Add(patience)
	for {
		var obj runtime.Object
		obj, err = store.Get(inCluster(ctx, usersInfo.ID), label, &metav1.GetOptions{})
		if err == nil {
			ws = obj.(*tenancyv1alpha1.Workspace)
			break
		}
		if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	if apierrors.IsNotFound(err) {
		return errAbsent
	}
	if err != nil {
		return fmt.Errorf("reading home workspace %s: %w", p, err)
	}
	if owner := ws.Annotations[OwnerAnnotation]; owner != name {
		klog.FromContext(ctx).Error(nil, "Home workspace label taken by another owner", "user", name, "workspace", p)
		return fmt.Errorf("home workspace %s belongs to another user: %w", p, ErrNoHome)
	}
	if ws.DeletionTimestamp != nil {
		return fmt.Errorf("home workspace %s is being deleted: %w", p, ErrNoHome)
	}
	return nil
}

// EnsureUsers creates root:users, the parent of every home, if missing.
func (m *Manager) EnsureUsers(ctx context.Context) error {
	b := m.bound.Load()
	if b == nil {
		return errors.New("home workspaces are not ready yet")
	}
	_, err := m.ensureUsers(ctx, b.store)
	return err
}

// ensureUsers returns root:users' id. The hub creates it with no user in
// the context, so the initializer binds nobody: only hub administrators,
// or those they grant, may list the homes.
func (m *Manager) ensureUsers(ctx context.Context, store Store) (cluster.ID, error) {
	if info, ok := m.index.Cached(string(UsersPath)); ok && !info.Terminating {
		return info.ID, nil
	}
	root, err := m.index.Resolve(ctx, string(cluster.RootPath))
	if err != nil {
		return "", fmt.Errorf("resolving root: %w", err)
	}
	_, name, _ := UsersPath.Parent()
	ws := &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := store.Create(inCluster(ctx, root.ID), ws, rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating %s: %w", UsersPath, err)
	}
	info, err := m.index.Resolve(ctx, string(UsersPath))
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", UsersPath, err)
	}
	if info.Terminating {
		return "", fmt.Errorf("%s is being deleted", UsersPath)
	}
	return info.ID, nil
}

// inCluster addresses cluster-scoped storage of one logical cluster.
func inCluster(ctx context.Context, id cluster.ID) context.Context {
	return request.WithNamespace(cluster.WithCluster(ctx, id), metav1.NamespaceNone)
}
