package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/wharfhub/wharf/test/bench/benchkit"
)

// boundWorkspaces creates children root:<prefix>-<i> for i in [0,n) on
// workers goroutines; in each it waits until namespace default is served and
// binds alice to ClusterRole view with a ClusterRoleBinding. It returns the
// workspace paths.
func boundWorkspaces(ctx context.Context, h *benchkit.Hub, prefix string, n, workers int) ([]string, error) {
	return benchkit.CreateWorkspaces(ctx, h, prefix, n, workers, func(ctx context.Context, cs kubernetes.Interface, path string) error {
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "alice-view"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}},
		}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("bind alice in %s: %w", path, err)
		}
		return nil
	})
}

// createTarget creates ConfigMap default/bench in ws and returns its URL
// path below the hub URL.
func createTarget(ctx context.Context, h *benchkit.Hub, ws string) (string, error) {
	cs, err := kubernetes.NewForConfig(h.Config(ws))
	if err != nil {
		return "", fmt.Errorf("clientset for %s: %w", ws, err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		Data:       map[string]string{"payload": "wharf rbac benchmark"},
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create configmap in %s: %w", ws, err)
	}
	return "/clusters/" + ws + "/api/v1/namespaces/default/configmaps/bench", nil
}
